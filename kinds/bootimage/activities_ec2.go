package bootimage

import (
	"context"
	"fmt"
	"sync"

	"go.temporal.io/sdk/activity"

	"github.com/fleetsaga/fleetsaga/fleet/ec2"
	"github.com/fleetsaga/fleetsaga/fleet/machineapi"
)

// amiCache keeps what EC2 said of each AMI, per cluster (each cluster asks
// with its own credentials): an AMI's owner never changes, so each is asked
// once per worker. A missing AMI or a failed lookup is asked again.
type amiCache struct {
	mu   sync.Mutex
	seen map[string]machineapi.AMIOrigin // cluster/region/AMI → origin
}

// amiOrigins asks EC2 who owns the AMI of each AWS MachineSet fleetsaga
// would reconcile, as the MCO does only after its MachineSet checks
// (machine-config-operator pkg/controller/bootimage/ms_helpers.go, then
// pkg/controller/bootimage/platform_helpers.go, reconcileAWSProviderSpec,
// and pkg/controller/bootimage/aws_helpers.go, describeAMI), with the
// cluster's aws-cloud-credentials. The Secret is
// read only when an AMI must be asked about, and one EC2 client serves each
// region. What fails one lookup (refused or STS credentials, an empty
// region, EC2's refusal) is that AMI's Failure: the plan refuses its
// MachineSets, not the others. Only a transient error fails the activity
// (Temporal retries it).
func (a *BootImageActivities) amiOrigins(ctx context.Context, c *machineapi.Client, sets []*machineapi.MachineSet, st machineapi.ClusterStatus) (machineapi.AMIOrigins, error) {
	out := machineapi.AMIOrigins{}
	l := ec2Lookup{a: a, c: c, clients: map[string]*ec2.Client{}}
	for _, ms := range sets {
		img, ok := machineapi.AMIToLookUp(ms, st)
		if !ok {
			continue
		}
		if _, done := out[img.AMI]; done {
			continue
		}
		o, err := l.origin(ctx, img)
		if err != nil {
			return nil, err
		}
		out[img.AMI] = o
	}
	return out, nil
}

// ec2Lookup holds one activity's credentials and per-region clients.
type ec2Lookup struct {
	a       *BootImageActivities
	c       *machineapi.Client
	read    bool
	creds   machineapi.AWSCredentials
	credErr string
	clients map[string]*ec2.Client
}

func (l *ec2Lookup) origin(ctx context.Context, img machineapi.BootImage) (machineapi.AMIOrigin, error) {
	if img.Region == "" {
		return machineapi.AMIOrigin{Failure: "providerSpec placement.region is empty: EC2 cannot be asked which account owns it"}, nil
	}
	key := l.c.Cluster + "/" + img.Region + "/" + img.AMI
	if o, ok := l.a.amis.get(key); ok {
		return o, nil
	}
	cl, failure, err := l.client(ctx, img.Region)
	if err != nil || failure != "" {
		return machineapi.AMIOrigin{Failure: failure}, err
	}
	activity.RecordHeartbeat(ctx, "ec2: describing "+img.AMI)
	got, err := cl.DescribeImage(ctx, img.AMI)
	switch {
	case ec2.IsNotFound(err):
		return machineapi.AMIOrigin{Missing: true}, nil
	case ec2.IsDenied(err):
		// Refused credentials (also mid-rotation of aws-cloud-credentials)
		// fail the MachineSet, not the run: the bump is run again once the
		// Secret holds keys EC2 accepts.
		return machineapi.AMIOrigin{Failure: fmt.Sprintf("EC2 refused the credentials of secret %s/%s (%v); if they were just rotated, run the bump again",
			machineapi.NamespaceMachineAPI, machineapi.AWSCredentialsSecret, err)}, nil
	case err != nil:
		return machineapi.AMIOrigin{}, err // transient: Temporal retries
	}
	o := machineapi.AMIOrigin{Owner: got.OwnerID, Name: got.Name}
	l.a.amis.put(key, o)
	return o, nil
}

// client is region's EC2 client; failure says why there is none (the
// credentials Secret cannot be used), err is a transient read error.
func (l *ec2Lookup) client(ctx context.Context, region string) (*ec2.Client, string, error) {
	if !l.read {
		cr, err := l.c.AWSCredentials(ctx)
		if err != nil && (machineapi.IsTransient(err) || machineapi.IsConflict(err)) {
			return nil, "", err
		}
		l.read, l.creds = true, cr
		if err != nil {
			l.credErr = err.Error()
		}
	}
	if l.credErr != "" {
		return nil, l.credErr, nil
	}
	if cl := l.clients[region]; cl != nil {
		return cl, "", nil
	}
	cl, err := ec2.New(region, l.a.Kube.EC2, l.creds.AccessKeyID, l.creds.SecretAccessKey, nil)
	if err != nil {
		return nil, err.Error(), nil
	}
	l.clients[region] = cl
	return cl, "", nil
}

func (m *amiCache) get(key string) (machineapi.AMIOrigin, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.seen[key]
	return o, ok
}

func (m *amiCache) put(key string, o machineapi.AMIOrigin) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seen == nil {
		m.seen = map[string]machineapi.AMIOrigin{}
	}
	m.seen[key] = o
}
