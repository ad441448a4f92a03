// Package ec2 asks Amazon EC2 who owns an AMI, as the machine-config
// operator does before it bumps a MachineSet's boot image
// (openshift/machine-config-operator pkg/controller/bootimage/aws_helpers.go,
// describeAMI), with aws-sdk-go-v2's EC2 client. Which owners are Red
// Hat's is fleet/machineapi's (origin.go).
package ec2

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awsec2 "github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/smithy-go"
)

// requestTimeout bounds one DescribeImages call: the activity heartbeats
// between calls and Temporal retries a slow one.
const requestTimeout = 30 * time.Second

// Image is what fleetsaga reads of an AMI.
type Image struct {
	ID      string `json:"id"`
	OwnerID string `json:"ownerId"`
	Name    string `json:"name"`
}

// Client is an EC2 client of one region.
type Client struct {
	api    *awsec2.Client
	region string
}

// New builds the client of region with static credentials. endpoint,
// when set, replaces the region's public endpoint (fleetsim, a VPC
// endpoint); hc, when set, is the HTTP client used.
func New(region, endpoint, accessKeyID, secretAccessKey string, hc *http.Client) (*Client, error) {
	if region == "" {
		return nil, errors.New("ec2: region is required")
	}
	if accessKeyID == "" || secretAccessKey == "" {
		return nil, errors.New("ec2: static credentials are required")
	}
	opts := awsec2.Options{
		Region:      region,
		Credentials: credentials.NewStaticCredentialsProvider(accessKeyID, secretAccessKey, ""),
	}
	if endpoint != "" {
		opts.BaseEndpoint = aws.String(endpoint)
	}
	if hc != nil {
		opts.HTTPClient = hc
	}
	return &Client{api: awsec2.New(opts), region: region}, nil
}

// DescribeImage reads one AMI (the MCO asks per AMI, by ID).
func (c *Client) DescribeImage(ctx context.Context, id string) (Image, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	out, err := c.api.DescribeImages(ctx, &awsec2.DescribeImagesInput{ImageIds: []string{id}})
	if err != nil {
		return Image{}, fmt.Errorf("ec2 %s: DescribeImages %s: %w", c.region, id, err)
	}
	if len(out.Images) == 0 {
		return Image{}, fmt.Errorf("ec2 %s: DescribeImages %s: %w", c.region, id, ErrNotFound)
	}
	img := out.Images[0]
	return Image{ID: aws.ToString(img.ImageId), OwnerID: aws.ToString(img.OwnerId), Name: aws.ToString(img.Name)}, nil
}

// ErrNotFound: EC2 has no such AMI in the region.
var ErrNotFound = errors.New("no such AMI")

// IsNotFound: the AMI does not exist (or its ID is not one).
func IsNotFound(err error) bool {
	if errors.Is(err, ErrNotFound) {
		return true
	}
	code := errorCode(err)
	return code == "InvalidAMIID.NotFound" || code == "InvalidAMIID.Malformed" || code == "InvalidAMIID.Unavailable"
}

// IsDenied: the credentials are refused; retrying does not help.
func IsDenied(err error) bool {
	switch errorCode(err) {
	case "AuthFailure", "UnauthorizedOperation", "InvalidClientTokenId", "SignatureDoesNotMatch", "OptInRequired":
		return true
	}
	return false
}

func errorCode(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	return ""
}
