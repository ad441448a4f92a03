// Package machineapi is fleetsaga's client for OpenShift's machine API and
// the boot image records around it, built on k8s.io/client-go's dynamic
// client with unstructured objects (no discovery needed), so it works
// against a real cluster's API server as well as against fleetsim.
//
// What it reads and writes:
//   - MachineSets (machine.openshift.io/v1beta1, openshift-machine-api):
//     list, get, JSON merge patch of the boot image and of spec.replicas,
//     always carrying metadata.resourceVersion (optimistic concurrency);
//   - Machines of a MachineSet (phase, nodeRef, image);
//   - the golden record: ConfigMap coreos-bootimages in
//     openshift-machine-config-operator (CoreOS stream JSON, releaseVersion,
//     MCOReleaseImageVersion);
//   - on AWS, the aws-cloud-credentials Secret, to ask EC2 who owns an AMI
//     (fleet/ec2);
//   - cluster status: ClusterVersion "version" (desired version,
//     status.history[0].state, multi-arch payload), Infrastructure "cluster"
//     (platform) and the control plane nodes' arch;
//   - the boot image record: MachineConfiguration "cluster"
//     (operator.openshift.io/v1) status.bootImageSkewEnforcementStatus and
//     its Upgradeable condition.
//
// Errors keep client-go's *StatusError; use IsConflict (retry on a fresh
// read), IsNotFound, IsMalformed (the object does not have the expected
// shape; do not retry) and IsTransient.
package machineapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// Namespaces, names and labels of the OpenShift objects involved (fleetsim
// serves the same ones).
const (
	NamespaceMachineAPI = "openshift-machine-api"
	NamespaceMCO        = "openshift-machine-config-operator"
	// GoldenConfigMap is the golden boot image record (CoreOS stream JSON,
	// releaseVersion, MCOReleaseImageVersion), written by the MCO.
	GoldenConfigMap = "coreos-bootimages"
	// AWSCredentialsSecret (openshift-machine-api) holds the cloud
	// credentials the machine API operator's CredentialsRequest provisions;
	// the MCO reads it for ec2:DescribeImages (machine-config-operator
	// pkg/controller/bootimage/aws_helpers.go, awsCredentialsSecretName).
	AWSCredentialsSecret = "aws-cloud-credentials"
	// MachineConfigurationName is the cluster-scoped MachineConfiguration
	// (operator.openshift.io/v1) whose status records the cluster's boot image
	// version (status.bootImageSkewEnforcementStatus) and the Upgradeable
	// condition set by skew enforcement.
	MachineConfigurationName = "cluster"
	ClusterVersionName       = "version"
	InfrastructureName       = "cluster"

	// Keys of the golden ConfigMap. The skew limit keys are a fleetsaga
	// addition (the release's oldest acceptable boot image); without them
	// the MCO's own limits apply (MCOSkewLimitOCPVersion).
	KeyStream                = "stream"
	KeyReleaseVersion        = "releaseVersion"
	KeyMCOReleaseImage       = "MCOReleaseImageVersion"
	KeySkewLimitOCPVersion   = "bootImageSkewLimitOCPVersion"
	KeySkewLimitRHCOSVersion = "bootImageSkewLimitRHCOSVersion"

	// Labels and annotations on MachineSets and nodes.
	AnnotationCapacityLabels = "capacity.cluster-autoscaler.kubernetes.io/labels"
	LabelOSID                = "machine.openshift.io/os-id"
	// LabelOSStream is read from the MachineSet's own labels, without a
	// hyphen (machine-config-operator
	// pkg/controller/bootimage/boot_image_controller.go, OSStreamLabelKey).
	LabelOSStream     = "machineconfiguration.openshift.io/osstream"
	LabelMachineSet   = "machine.openshift.io/cluster-api-machineset"
	LabelCluster      = "machine.openshift.io/cluster-api-cluster"
	LabelArch         = "kubernetes.io/arch"
	LabelControlPlane = "node-role.kubernetes.io/control-plane"
	LabelWorker       = "node-role.kubernetes.io/worker"
)

// GVRs used.
var (
	GVRConfigMaps            = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	GVRSecrets               = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	GVRNodes                 = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	GVRMachineSets           = schema.GroupVersionResource{Group: "machine.openshift.io", Version: "v1beta1", Resource: "machinesets"}
	GVRMachines              = schema.GroupVersionResource{Group: "machine.openshift.io", Version: "v1beta1", Resource: "machines"}
	GVRClusterVersions       = schema.GroupVersionResource{Group: "config.openshift.io", Version: "v1", Resource: "clusterversions"}
	GVRInfrastructures       = schema.GroupVersionResource{Group: "config.openshift.io", Version: "v1", Resource: "infrastructures"}
	GVRMachineConfigurations = schema.GroupVersionResource{Group: "operator.openshift.io", Version: "v1", Resource: "machineconfigurations"}
)

// Client talks to one cluster.
type Client struct {
	dyn     dynamic.Interface
	Cluster string
}

// ClusterConfig is the rest.Config for cluster under a multi-cluster base
// URL laid out as {kubeBase}/clusters/{cluster} (fleetsim, and proxies such
// as Rancher's). Client-side rate limits are raised: the workflow, not
// client-go, paces its calls.
func ClusterConfig(kubeBase, cluster string) *rest.Config {
	return &rest.Config{
		Host:      strings.TrimRight(kubeBase, "/") + "/clusters/" + url.PathEscape(cluster),
		UserAgent: "fleetsaga",
		QPS:       200,
		Burst:     400,
		Timeout:   30 * time.Second,
	}
}

// New builds a client from a rest.Config (e.g. from a kubeconfig); hc, when
// set, is the HTTP client used (its transport is shared).
func New(cfg *rest.Config, cluster string, hc *http.Client) (*Client, error) {
	var (
		dyn dynamic.Interface
		err error
	)
	if hc != nil {
		dyn, err = dynamic.NewForConfigAndClient(cfg, hc)
	} else {
		dyn, err = dynamic.NewForConfig(cfg)
	}
	if err != nil {
		return nil, fmt.Errorf("machineapi client for cluster %q: %w", cluster, err)
	}
	return &Client{dyn: dyn, Cluster: cluster}, nil
}

// ForCluster is New(ClusterConfig(kubeBase, cluster), cluster, hc).
func ForCluster(kubeBase, cluster string, hc *http.Client) (*Client, error) {
	if cluster == "" {
		return nil, errors.New("machineapi: cluster name is required")
	}
	return New(ClusterConfig(kubeBase, cluster), cluster, hc)
}

// --- errors ---

// ErrMalformed marks an object that does not have the shape fleetsaga
// expects (missing providerSpec, unparsable stream JSON, ...). Retrying
// does not help.
var ErrMalformed = errors.New("malformed object")

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

// IsConflict: the object changed since it was read (HTTP 409); retry on a
// fresh read.
func IsConflict(err error) bool { return apierrors.IsConflict(err) }

// IsNotFound: the object does not exist.
func IsNotFound(err error) bool { return apierrors.IsNotFound(err) }

// IsMalformed: the object has an unexpected shape.
func IsMalformed(err error) bool { return errors.Is(err, ErrMalformed) }

// IsTransient: the API server or the network failed in a way a retry may
// fix (5xx, 429, timeouts, connection errors).
func IsTransient(err error) bool {
	if err == nil {
		return false
	}
	if apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err) || apierrors.IsUnexpectedServerError(err) {
		return true
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		return st.Status().Code >= 500
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	return errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "connection refused") ||
		strings.Contains(err.Error(), "EOF")
}

// --- raw access ---

func (c *Client) res(gvr schema.GroupVersionResource, ns string) dynamic.ResourceInterface {
	if ns == "" {
		return c.dyn.Resource(gvr)
	}
	return c.dyn.Resource(gvr).Namespace(ns)
}

func (c *Client) get(ctx context.Context, gvr schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, error) {
	u, err := c.res(gvr, ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("cluster %s: get %s %s: %w", c.Cluster, gvr.Resource, name, err)
	}
	return u, nil
}
