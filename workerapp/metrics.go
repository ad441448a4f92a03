package workerapp

import (
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
)

// Metrics holds the Prometheus registry the worker serves: the Temporal
// SDK's metrics (through OpenTelemetry) plus Go runtime and process metrics.
type Metrics struct {
	Registry *prometheus.Registry
	// SDK is the handler to put in client.Options.MetricsHandler.
	SDK client.MetricsHandler
	// WorkflowPanics counts workflow tasks that panicked, once each, by
	// workflow type (each blocks its workflow until a fixed worker runs
	// it: alert on it). The SDK unwinding a workflow it evicted from its
	// cache is not one (panics.go).
	WorkflowPanics *prometheus.CounterVec
	// AuditUnsigned counts rows the worker appended to the audit trail
	// and did not sign (ledger.UnsignedAppend), by table and why ("bogus":
	// a head row with the worker's fingerprint that its key did not sign;
	// "unsigned": a row before it the worker never signed). Any is someone
	// without the key writing to the ledger: alert on it.
	AuditUnsigned *prometheus.CounterVec
}

// NewMetrics builds the registry and the SDK metrics handler.
func NewMetrics() (*Metrics, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo())
	if err != nil {
		return nil, fmt.Errorf("metrics exporter: %w", err)
	}
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	sdk := temporalotel.NewMetricsHandler(temporalotel.MetricsHandlerOptions{
		Meter:                provider.Meter("temporal-sdk-go"),
		UseMonotonicCounters: true,
		OnError:              func(error) {}, // a metrics failure must never fail a workflow task
	})
	panics := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fleetsaga_workflow_panics_total",
		Help: "Workflow tasks that panicked; each blocks its workflow until a worker with a fix runs it.",
	}, []string{"workflow_type"})
	unsigned := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fleetsaga_audit_unsigned_appends_total",
		Help: "Audit rows the worker appended and refused to sign: someone without the worker's key wrote to that chain (why: bogus head or unsigned row).",
	}, []string{"table", "why"})
	reg.MustRegister(panics, unsigned)
	return &Metrics{Registry: reg, SDK: sdk, WorkflowPanics: panics, AuditUnsigned: unsigned}, nil
}

// Serve serves /metrics on addr in the background and returns the bound
// address (addr may use port 0).
func (m *Metrics) Serve(addr string) (string, func() error, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("metrics listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return ln.Addr().String(), srv.Close, nil
}
