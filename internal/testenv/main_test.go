package testenv_test

import (
	"os"
	"testing"

	"github.com/fleetsaga/fleetsaga/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }
