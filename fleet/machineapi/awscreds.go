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

// AWSCredentials reads the aws-cloud-credentials Secret. The MCO also
// accepts STS web identity (role_arn, web_identity_token_file), but that
// token file is mounted in the MCO's own pod: fleetsaga refuses it
// (malformed: no retry helps).
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
	id, err := field("aws_access_key_id")
	if err != nil {
		return AWSCredentials{}, err
	}
	key, err := field("aws_secret_access_key")
	if err != nil {
		return AWSCredentials{}, err
	}
	if id != "" && key != "" {
		return AWSCredentials{AccessKeyID: id, SecretAccessKey: key}, nil
	}
	if data["role_arn"] != "" {
		return AWSCredentials{}, malformed("secret %s/%s holds STS web identity credentials, whose token file is in the MCO's pod: fleetsaga needs static keys to ask EC2 who owns an AMI", NamespaceMachineAPI, AWSCredentialsSecret)
	}
	return AWSCredentials{}, malformed("secret %s/%s has neither aws_access_key_id/aws_secret_access_key nor STS credentials", NamespaceMachineAPI, AWSCredentialsSecret)
}
