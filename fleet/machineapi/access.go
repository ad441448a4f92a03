package machineapi

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Access says how to reach each cluster's API server. Per cluster, the
// first that applies wins:
//   - InCluster names the cluster the worker itself runs in: client-go's
//     in-cluster config (service account token and CA);
//   - Kubeconfig is a kubeconfig file (client-go's loading rules, as kubectl
//     reads it): the cluster is the context of the same name, with its
//     server, TLS and credentials;
//   - BaseURL is a multi-cluster root laid out as {BaseURL}/clusters/{name}
//     (fleetsim, and proxies such as Rancher's), unauthenticated.
type Access struct {
	BaseURL    string `json:"baseURL,omitempty"`
	Kubeconfig string `json:"kubeconfig,omitempty"`
	InCluster  string `json:"inCluster,omitempty"`
	// EC2, when set, replaces each region's public EC2 endpoint (fleetsim,
	// a VPC endpoint): the boot image bump asks EC2 who owns an AMI.
	EC2 string `json:"ec2,omitempty"`
}

// Validate checks that there is a way in and that the kubeconfig loads.
func (a Access) Validate() error {
	if a.BaseURL == "" && a.Kubeconfig == "" && a.InCluster == "" {
		return errors.New("machineapi: no Kubernetes access: set a base URL, a kubeconfig or the in-cluster cluster name")
	}
	if a.Kubeconfig != "" {
		if _, err := clientcmd.LoadFromFile(a.Kubeconfig); err != nil {
			return fmt.Errorf("machineapi: kubeconfig: %w", err)
		}
	}
	return nil
}

// Config returns the rest.Config for cluster. own says whether it carries
// its own transport settings (TLS, credentials): then a shared HTTP client
// must not replace its transport.
func (a Access) Config(cluster string) (cfg *rest.Config, own bool, err error) {
	if cluster == "" {
		return nil, false, errors.New("machineapi: cluster name is required")
	}
	switch {
	case a.InCluster != "" && cluster == a.InCluster:
		cfg, err = rest.InClusterConfig()
		if err != nil {
			return nil, false, fmt.Errorf("machineapi: cluster %q: in-cluster config: %w", cluster, err)
		}
		return tune(cfg), true, nil
	case a.Kubeconfig != "":
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		rules.ExplicitPath = a.Kubeconfig
		cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: cluster})
		raw, err := cc.RawConfig()
		if err != nil {
			return nil, false, fmt.Errorf("machineapi: kubeconfig %s: %w", a.Kubeconfig, err)
		}
		// Never fall back to the current context: it is another cluster.
		if _, ok := raw.Contexts[cluster]; !ok {
			return nil, false, fmt.Errorf("machineapi: kubeconfig %s has no context named %q", a.Kubeconfig, cluster)
		}
		cfg, err = cc.ClientConfig()
		if err != nil {
			return nil, false, fmt.Errorf("machineapi: kubeconfig %s, context %q: %w", a.Kubeconfig, cluster, err)
		}
		return tune(cfg), true, nil
	case a.BaseURL != "":
		return ClusterConfig(a.BaseURL, cluster), false, nil
	}
	return nil, false, fmt.Errorf("machineapi: no Kubernetes access for cluster %q", cluster)
}

// Client builds the client of cluster; hc is used only for base-URL access
// (a kubeconfig's or the service account's transport is kept).
func (a Access) Client(cluster string, hc *http.Client) (*Client, error) {
	cfg, own, err := a.Config(cluster)
	if err != nil {
		return nil, err
	}
	if own {
		hc = nil
	}
	return New(cfg, cluster, hc)
}

// tune raises client-side rate limits (the workflow paces its calls) and
// bounds each request, as ClusterConfig does.
func tune(cfg *rest.Config) *rest.Config {
	cfg.UserAgent = "fleetsaga"
	cfg.QPS, cfg.Burst = 200, 400
	if cfg.Timeout == 0 {
		cfg.Timeout = 30 * time.Second
	}
	return cfg
}
