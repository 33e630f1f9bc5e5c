//go:build linux

package platform

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/citycells/compute/internal/planes"
)

// stopGrace is how long a process group gets between SIGTERM and SIGKILL.
const stopGrace = 5 * time.Second

// owned reports whether pid is alive and still runs the recorded binary,
// so a pid reused by an unrelated process after a reboot is never touched.
func owned(c ComponentRecord) bool {
	if c.PID <= 0 {
		return false
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(c.PID) + "/cmdline")
	if err != nil {
		return false
	}
	argv0, _, _ := bytes.Cut(cmdline, []byte{0})
	return string(argv0) == c.Binary
}

// zombie reports whether pid has exited but not been reaped: it holds no
// ports and no memory, and only its parent can make it go away.
func zombie(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) state ...: comm may contain spaces, so cut at the last ')'.
	i := bytes.LastIndexByte(data, ')')
	return i >= 0 && i+2 < len(data) && data[i+2] == 'Z'
}

// stopTier orders StopRecorded: clients before the servers they use.
func stopTier(c ComponentRecord) int {
	switch {
	case c.Name == "etcd":
		return 0
	case strings.HasPrefix(c.Name, "kube-apiserver-"):
		return 1
	case strings.HasPrefix(c.Name, "kube-controller-manager-"):
		return 2
	case strings.HasPrefix(c.Name, "karmada-aggregated-apiserver"), strings.HasPrefix(c.Name, "karmada-webhook"),
		strings.HasPrefix(c.Name, componentMetricsServer+"-"):
		return 3
	default:
		return 4
	}
}

// stopComponents stops the process group of every owned component, tier by
// tier (managers first, etcd last): SIGTERM, then SIGKILL after stopGrace.
// It returns the components it stopped and an error naming any that would
// not die.
func stopComponents(components []ComponentRecord) ([]ComponentRecord, error) {
	var stopped []ComponentRecord
	var errs []error
	var mu sync.Mutex
	for tier := 4; tier >= 0; tier-- {
		var wg sync.WaitGroup
		for _, c := range components {
			if stopTier(c) != tier || !owned(c) {
				continue
			}
			wg.Go(func() {
				err := stopGroup(c.PID)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, fmt.Errorf("%s (pid %d): %w", c.Name, c.PID, err))
					return
				}
				stopped = append(stopped, c)
			})
		}
		wg.Wait()
	}
	return stopped, errors.Join(errs...)
}

// stopGroup terminates the process group led by pid and waits until pid is
// gone (or a zombie whose parent has left, which holds nothing).
func stopGroup(pid int) error {
	gone := func() bool {
		return syscall.Kill(pid, 0) != nil || zombie(pid)
	}
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	if waitUntil(gone) {
		return nil
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	if waitUntil(gone) {
		return nil
	}
	return errors.New("still running after SIGKILL")
}

// waitUntil polls cond every 50ms for up to stopGrace.
func waitUntil(cond func() bool) bool {
	deadline := time.Now().Add(stopGrace)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// RSSBytes returns the resident set size of pid from /proc/<pid>/status
// (VmRSS).
func RSSBytes(pid int) (int64, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		rest, ok := strings.CutPrefix(line, "VmRSS:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("unexpected VmRSS line %q", line)
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, err
		}
		return kb * 1024, nil
	}
	return 0, fmt.Errorf("no VmRSS for pid %d", pid)
}

// hostPort renders a loopback address.
func hostPort(port int) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

// prober checks health URLs: plain HTTP, or HTTPS trusting the platform CA.
type prober struct {
	client *http.Client
}

// newProber returns a prober trusting caPEM for HTTPS URLs.
func newProber(caPEM []byte) (*prober, error) {
	pool := x509.NewCertPool()
	if len(caPEM) > 0 && !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("the platform CA certificate cannot be parsed")
	}
	return &prober{client: &http.Client{
		Timeout: 2 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
			DisableKeepAlives: true,
		},
	}}, nil
}

// selfSigned checks loopback HTTPS endpoints whose certificate the
// component made itself: only reachability and the answer matter there.
var selfSigned = &http.Client{
	Timeout: 2 * time.Second,
	Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}, //nolint:gosec // loopback health probe of a self-signed component
		DisableKeepAlives: true,
	},
}

// probe is ok, without verifying the certificate when selfSigned is set;
// a unix:// URL is ok when its socket accepts connections.
func (p *prober) probe(ctx context.Context, url string, insecure bool) (bool, error) {
	if path, ok := strings.CutPrefix(url, "unix://"); ok {
		return dialUnix(path)
	}
	c := p.client
	if insecure {
		c = selfSigned
	}
	return planes.HTTPOK(ctx, c, url)
}
