package ec2_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleet/ec2"
)

// EC2's Query API answers, as the SDK parses them: the owner and name of
// an AMI, a missing AMI and refused credentials each classified.
func TestDescribeImageAnswers(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.NoError(t, r.ParseForm())
		assert.Equal(t, "DescribeImages", r.PostForm.Get("Action"))
		assert.Contains(t, r.Header.Get("Authorization"), "AKIDTEST", "signed with the given keys")
		w.Header().Set("Content-Type", "text/xml")
		switch r.PostForm.Get("ImageId.1") {
		case "ami-rhcos":
			_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?>
<DescribeImagesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>r1</requestId><imagesSet><item>
<imageId>ami-rhcos</imageId><imageOwnerId>531415883065</imageOwnerId><name>rhcos-9.6.20250523-0-x86_64</name></item></imagesSet></DescribeImagesResponse>`))
		case "ami-gone":
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`<Response><Errors><Error><Code>InvalidAMIID.NotFound</Code><Message>The image id '[ami-gone]' does not exist</Message></Error></Errors><RequestID>r2</RequestID></Response>`))
		default:
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`<Response><Errors><Error><Code>AuthFailure</Code><Message>denied</Message></Error></Errors><RequestID>r3</RequestID></Response>`))
		}
	}))
	defer srv.Close()
	c, err := ec2.New("us-east-1", srv.URL, "AKIDTEST", "not-a-secret", nil)
	require.NoError(t, err)
	ctx := context.Background()

	img, err := c.DescribeImage(ctx, "ami-rhcos")
	require.NoError(t, err)
	assert.Equal(t, ec2.Image{ID: "ami-rhcos", OwnerID: "531415883065", Name: "rhcos-9.6.20250523-0-x86_64"}, img)

	_, err = c.DescribeImage(ctx, "ami-gone")
	assert.True(t, ec2.IsNotFound(err), "%v", err)
	assert.False(t, ec2.IsDenied(err))

	_, err = c.DescribeImage(ctx, "ami-other")
	assert.True(t, ec2.IsDenied(err), "%v", err)
	assert.NotContains(t, err.Error(), "not-a-secret", "no secret in an error")

	_, err = ec2.New("", srv.URL, "a", "b", nil)
	assert.Error(t, err, "no region")
	_, err = ec2.New("us-east-1", srv.URL, "", "", nil)
	assert.Error(t, err, "no credentials")
}
