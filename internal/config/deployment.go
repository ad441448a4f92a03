package config

import (
	"errors"

	"github.com/spf13/pflag"

	"github.com/fleetsaga/fleetsaga/internal/buildid"
)

// Environment variables naming the worker's Worker Deployment Version.
const (
	EnvDeploymentName = "FLEETSAGA_DEPLOYMENT_NAME"
	EnvBuildID        = "FLEETSAGA_BUILD_ID"
)

// Deployment names the Worker Deployment Version a worker polls as: both
// set runs with Worker Deployment Versioning (docs/DEPLOYING.md), as every
// worker the project starts does; both empty runs unversioned, which the
// worker warns about.
type Deployment struct {
	Name    string
	BuildID string
}

// Bind registers --deployment-name and --build-id on fs.
func (d *Deployment) Bind(fs *pflag.FlagSet) {
	fs.StringVar(&d.Name, "deployment-name", env(EnvDeploymentName, ""),
		"Worker Deployment name; with --build-id turns on worker versioning (env "+EnvDeploymentName+")")
	fs.StringVar(&d.BuildID, "build-id", env(EnvBuildID, ""),
		"this worker build's ID within the deployment, e.g. the image tag; "+buildid.Auto+
			" derives it from the worker's executable (env "+EnvBuildID+")")
}

// Validate refuses one of the two without the other: half a version would
// silently run unversioned.
func (d Deployment) Validate() error {
	switch {
	case d.Name == "" && d.BuildID != "":
		return errors.New("--build-id needs --deployment-name (env " + EnvDeploymentName + ")")
	case d.Name != "" && d.BuildID == "":
		return errors.New("--deployment-name needs --build-id (env " + EnvBuildID + ")")
	}
	return nil
}

// ResolvedBuildID is the build ID to poll as: --build-id, or with
// --build-id=auto the one derived from this executable (its clean git
// commit, else its digest), so installing another binary is another build.
func (d Deployment) ResolvedBuildID() string {
	if d.BuildID == buildid.Auto {
		return buildid.Self()
	}
	return d.BuildID
}

// Versioned reports whether the worker runs as a deployment version.
func (d Deployment) Versioned() bool { return d.Name != "" && d.BuildID != "" }
