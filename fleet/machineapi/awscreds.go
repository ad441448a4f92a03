package machineapi

import (
	"context"
	"encoding/base64"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// AWSCredentials are the static keys of the aws-cloud-credentials Secret.
// They go to the EC2 client only: never into a log, an error or a result.
type AWSCredentials struct {
	AccessKeyID     string
	SecretAccessKey string
}

// String hides the keys from any formatting.
func (AWSCredentials) String() string { return "AWSCredentials{redacted}" }

// GoString hides the keys from %#v.
func (c AWSCredentials) GoString() string { return c.String() }

// AWSCredentials reads the aws-cloud-credentials Secret in the MCO's order
// (machine-config-operator pkg/controller/bootimage/aws_helpers.go,
// newAWSEC2Client): STS web identity (role_arn, web_identity_token_file)
// first, then static keys. STS is refused: its token file is mounted in
// pods of the cluster only, and fleetsaga asks EC2 from outside it
// (malformed: no retry helps). A Secret with only a credentials INI is
// ccoctl's STS form, refused alike.
func (c *Client) AWSCredentials(ctx context.Context) (AWSCredentials, error) {
	u, err := c.get(ctx, GVRSecrets, NamespaceMachineAPI, AWSCredentialsSecret)
	if err != nil {
		return AWSCredentials{}, err
	}
	data, _, _ := unstructured.NestedStringMap(u.Object, "data")
	field := func(k string) (string, error) {
		if data[k] == "" {
			return "", nil
		}
		b, err := base64.StdEncoding.DecodeString(data[k])
		if err != nil {
			return "", malformed("secret %s/%s: %s is not base64", NamespaceMachineAPI, AWSCredentialsSecret, k)
		}
		return string(b), nil
	}
	sts := func(form string) error {
		return malformed("secret %s/%s holds %s: the cluster uses AWS STS, whose token only pods in the cluster can present; fleetsaga asks EC2 from outside the cluster and needs static keys (aws_access_key_id, aws_secret_access_key) in %s",
			NamespaceMachineAPI, AWSCredentialsSecret, form, AWSCredentialsSecret)
	}
	if data["role_arn"] != "" && data["web_identity_token_file"] != "" {
		return AWSCredentials{}, sts("STS web identity credentials (role_arn, web_identity_token_file)")
	}
	id, err := field("aws_access_key_id")
	if err != nil {
		return AWSCredentials{}, err
	}
	key, err := field("aws_secret_access_key")
	if err != nil {
		return AWSCredentials{}, err
	}
	switch {
	case id != "" && key != "":
		return AWSCredentials{AccessKeyID: id, SecretAccessKey: key}, nil
	case data["credentials"] != "":
		return AWSCredentials{}, sts("only a credentials file (ccoctl's STS form)")
	}
	return AWSCredentials{}, malformed("secret %s/%s has neither aws_access_key_id/aws_secret_access_key nor STS credentials (role_arn/web_identity_token_file)", NamespaceMachineAPI, AWSCredentialsSecret)
}
