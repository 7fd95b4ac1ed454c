package gdbmi_test

import (
	"testing"

	"github.com/sdm-hpc/sdm/testkit/testenv"
)

// TestMain removes the examples the tests built.
func TestMain(m *testing.M) { testenv.Main(m) }
