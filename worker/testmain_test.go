package main

import (
	"os"
	"testing"

	"github.com/fleetsaga/fleetsaga/internal/testenv"
)

// The audit key tests start a ledger (testenv): stop it when they end.
func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }
