package faults

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Client talks to a link proxy's control endpoint.
type Client struct {
	base string
	http *http.Client
}

// NewClient reaches the control endpoint at base (the state's
// FaultControl, http://host:port); an empty base is a platform started
// without the link proxy.
func NewClient(base string) (*Client, error) {
	if base == "" {
		return nil, errors.New("this platform was started without the link proxy (by an older compute-local): run `compute-local down` and `compute-local up` to get partitions")
	}
	return &Client{base: base, http: &http.Client{Timeout: 5 * time.Second}}, nil
}

// do sends a control request and decodes the answer into out.
func (fc *Client) do(ctx context.Context, method, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, fc.base+path, nil)
	if err != nil {
		return err
	}
	resp, err := fc.http.Do(req)
	if err != nil {
		return fmt.Errorf("the link proxy does not answer (%w): see `compute-local status`; `compute-local start %s` starts it again", err, LinkProxyComponent)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusOK {
		return errors.New(strings.TrimSpace(string(body)))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(body, out)
}

// Partition cuts city off for d (forever when d is 0) in mode.
func (fc *Client) Partition(ctx context.Context, city string, d time.Duration, mode string) (PartitionRecord, error) {
	var rec PartitionRecord
	q := "city=" + city + "&mode=" + mode
	if d > 0 {
		q += "&for=" + d.String()
	}
	err := fc.do(ctx, http.MethodPost, "/partition?"+q, &rec)
	return rec, err
}

// Heal reconnects city and reports whether it was partitioned.
func (fc *Client) Heal(ctx context.Context, city string) (bool, error) {
	var out struct {
		WasPartitioned bool `json:"wasPartitioned"`
	}
	err := fc.do(ctx, http.MethodPost, "/heal?city="+city, &out)
	return out.WasPartitioned, err
}

// Partitions lists the partitioned cities.
func (fc *Client) Partitions(ctx context.Context) ([]PartitionRecord, error) {
	var out []PartitionRecord
	err := fc.do(ctx, http.MethodGet, "/partitions", &out)
	return out, err
}
