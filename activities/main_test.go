package activities_test

import (
	"os"
	"testing"

	"github.com/fleetsaga/fleetsaga/internal/testenv"
)

// TestMain lets tests in this package use the real stack (testenv starts
// nothing unless a test asks for it). One TestMain per package: add tests
// beside this file, not another TestMain.
func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// sdkTestNamespace is the Temporal namespace the SDK's test activity
// environment runs activities in: the gates the tests sign name it.
const sdkTestNamespace = "default-test-namespace"
