//go:build e2e

// Package serial lets the end-to-end packages take turns. Each package
// starts a whole local platform (etcd, five apiservers, Karmada, compute);
// `go test ./test/e2e/...` runs packages in parallel, and two platforms at
// once on a small machine slow each other past their timeouts.
package serial

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockName is the lock file, shared by every package of the suite.
const lockName = "compute-e2e.lock"

// Lock blocks until no other end-to-end package holds the lock, takes it,
// and returns the function that releases it. The kernel releases it too if
// the test binary dies.
func Lock() (unlock func(), err error) {
	path := filepath.Join(os.TempDir(), lockName)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("failed to open the end-to-end lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("failed to take the end-to-end lock %s: %w", path, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}, nil
}
