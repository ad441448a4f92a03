package bootimage

import (
	"context"
	"sync"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/ec2"
	"github.com/fleetsaga/fleetsaga/fleet/machineapi"
)

// amiCache keeps what EC2 said of each AMI: an AMI's owner never changes,
// so each is asked once per worker (a missing one is asked again).
type amiCache struct {
	mu   sync.Mutex
	seen map[string]machineapi.AMIOrigin // region/AMI → origin
}

// amiOrigins asks EC2 who owns the AMI of each AWS MachineSet, as the MCO
// does before it bumps one (machine-config-operator
// pkg/controller/bootimage/aws_helpers.go, describeAMI), with the
// cluster's aws-cloud-credentials. A missing AMI is reported in the
// origins (the plan refuses it); refused credentials stop the activity.
func (a *BootImageActivities) amiOrigins(ctx context.Context, c *machineapi.Client, sets []*machineapi.MachineSet) (machineapi.AMIOrigins, error) {
	out := machineapi.AMIOrigins{}
	var creds *machineapi.AWSCredentials
	for _, ms := range sets {
		img, err := ms.Image()
		if err != nil || img.Platform != machineapi.PlatformAWS || img.AMI == "" {
			continue
		}
		key := img.Region + "/" + img.AMI
		if o, ok := a.amis.get(key); ok {
			out[img.AMI] = o
			continue
		}
		if creds == nil {
			cr, err := c.AWSCredentials(ctx)
			if err != nil {
				return nil, classifyKube(err)
			}
			creds = &cr
		}
		cl, err := ec2.New(img.Region, a.Kube.EC2, creds.AccessKeyID, creds.SecretAccessKey, nil)
		if err != nil {
			return nil, temporal.NewNonRetryableApplicationError(err.Error(), failure.BootImageInvalid, nil)
		}
		activity.RecordHeartbeat(ctx, "ec2: describing "+img.AMI)
		got, err := cl.DescribeImage(ctx, img.AMI)
		switch {
		case ec2.IsNotFound(err):
			out[img.AMI] = machineapi.AMIOrigin{Missing: true}
			continue
		case ec2.IsDenied(err):
			return nil, temporal.NewNonRetryableApplicationError(err.Error(), failure.BootImageInvalid, nil)
		case err != nil:
			return nil, err // transient: Temporal retries
		}
		o := machineapi.AMIOrigin{Owner: got.OwnerID, Name: got.Name}
		a.amis.put(key, o)
		out[img.AMI] = o
	}
	return out, nil
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
