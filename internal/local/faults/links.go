package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The link proxy is how `compute-local partition CITY` cuts a city off.
// Every connection that crosses a city's border goes through a TCP proxy:
// the hub's Karmada reaching the cell's apiserver (the Cluster's API
// endpoint), and the cell's compute-manager reaching the hub (write-back)
// and the project planes (quota). The cell's own traffic — its
// compute-manager and kube-controller-manager talking to its apiserver, the
// apiserver talking to etcd — does not, so a partitioned cell keeps running
// and keeps reconciling what it has, exactly as a city behind a broken
// uplink would. The proxy forwards bytes (TLS passes through untouched; the
// certificates name 127.0.0.1, which the proxy shares with the apiservers).
//
// A partition hangs the city's links: open connections are cut and new ones
// are accepted and then never answered, like packets that vanish, so
// clients find out by their own timeouts and health checks. --drop refuses
// instead (connections are closed at once). Healing closes the held
// connections so clients reconnect at once.

// LinkRecord is one proxied path across a city's border.
type LinkRecord struct {
	// Name says which way it goes: hub→cell-dfw, cell-dfw→hub,
	// cell-dfw→project-default.
	Name string `json:"name"`
	// City is the city whose partition cuts the link; empty for a link
	// inside the platform that no partition cuts (the admission webhook
	// front of replicated management roles).
	City string `json:"city,omitempty"`
	// Port is the proxy's loopback port.
	Port int `json:"port"`
	// Target is the host:port the proxy forwards to.
	Target string `json:"target"`
	// Fallbacks are host:ports tried in order when Target refuses the
	// connection, as a Service in front of replicas would send it to one
	// that answers.
	Fallbacks []string `json:"fallbacks,omitempty"`
}

// LinkProxyComponent is the link proxy's component name.
const LinkProxyComponent = "link-proxy"

// cityCode is what a --link's city must look like.
var cityCode = regexp.MustCompile(`^[A-Z]{3}$`)

// Partition modes.
const (
	// PartitionHang accepts connections and never answers them.
	PartitionHang = "hang"
	// PartitionDrop closes connections at once.
	PartitionDrop = "drop"
)

// PartitionRecord is a city the link proxy keeps cut off.
type PartitionRecord struct {
	// City is the city code.
	City string `json:"city"`
	// Mode is hang or drop.
	Mode string `json:"mode"`
	// Since is when the partition began.
	Since time.Time `json:"since"`
	// Until is when it heals by itself; zero means at `heal`.
	Until time.Time `json:"until,omitzero"`
}

// Proxy serves every link and the control endpoint.
type Proxy struct {
	links   []LinkRecord
	control net.Listener
	server  *http.Server

	mu         sync.Mutex
	listeners  []net.Listener
	conns      map[string]map[net.Conn]struct{} // city → open and held connections
	partitions map[string]PartitionRecord
	timers     map[string]*time.Timer
	wg         sync.WaitGroup
	closed     bool
}

// NewProxy listens on every link's port and on control (host:port).
func NewProxy(links []LinkRecord, control string) (*Proxy, error) {
	lp := &Proxy{
		links:      links,
		conns:      map[string]map[net.Conn]struct{}{},
		partitions: map[string]PartitionRecord{},
		timers:     map[string]*time.Timer{},
	}
	for _, l := range links {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(l.Port)))
		if err != nil {
			lp.Close()
			return nil, fmt.Errorf("link proxy: failed to listen for %s: %w", l.Name, err)
		}
		lp.listeners = append(lp.listeners, ln)
	}
	ln, err := net.Listen("tcp", control)
	if err != nil {
		lp.Close()
		return nil, fmt.Errorf("link proxy: failed to listen for control on %s: %w", control, err)
	}
	lp.control = ln
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	mux.HandleFunc("GET /partitions", lp.handleList)
	mux.HandleFunc("POST /partition", lp.handlePartition)
	mux.HandleFunc("POST /heal", lp.handleHeal)
	lp.server = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	return lp, nil
}

// ControlURL is the control endpoint's base URL.
func (lp *Proxy) ControlURL() string {
	return "http://" + lp.control.Addr().String()
}

// Serve forwards connections until Close.
func (lp *Proxy) Serve() {
	for i, ln := range lp.listeners {
		lp.wg.Go(func() { lp.accept(ln, lp.links[i]) })
	}
	lp.wg.Go(func() { _ = lp.server.Serve(lp.control) })
}

// Close stops listening and cuts every connection.
func (lp *Proxy) Close() {
	lp.mu.Lock()
	lp.closed = true
	for _, t := range lp.timers {
		t.Stop()
	}
	for _, ln := range lp.listeners {
		_ = ln.Close()
	}
	for _, set := range lp.conns {
		for c := range set {
			_ = c.Close()
		}
	}
	lp.mu.Unlock()
	if lp.server != nil {
		_ = lp.server.Close()
	} else if lp.control != nil {
		_ = lp.control.Close()
	}
	lp.wg.Wait()
}

// accept serves one link.
func (lp *Proxy) accept(ln net.Listener, l LinkRecord) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		lp.wg.Go(func() { lp.serveConn(c, l) })
	}
}

// serveConn forwards, holds or drops one connection.
func (lp *Proxy) serveConn(c net.Conn, l LinkRecord) {
	lp.mu.Lock()
	part, cut := lp.partitions[l.City]
	if lp.closed || (cut && part.Mode == PartitionDrop) {
		lp.mu.Unlock()
		_ = c.Close()
		return
	}
	lp.track(l.City, c)
	lp.mu.Unlock()
	defer lp.untrack(l.City, c)
	if cut {
		// Hold it, answering nothing, until heal closes it.
		_, _ = io.Copy(io.Discard, c)
		return
	}
	up, err := dialFirst(append([]string{l.Target}, l.Fallbacks...))
	if err != nil {
		_ = c.Close()
		return
	}
	lp.mu.Lock()
	if _, cut := lp.partitions[l.City]; cut || lp.closed {
		lp.mu.Unlock()
		_ = up.Close()
		_ = c.Close()
		return
	}
	lp.track(l.City, up)
	lp.mu.Unlock()
	defer lp.untrack(l.City, up)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		_ = dst.Close()
		_ = src.Close()
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	<-done
}

// dialFirst connects to the first of targets that accepts.
func dialFirst(targets []string) (net.Conn, error) {
	var err error
	for _, t := range targets {
		var c net.Conn
		if c, err = net.DialTimeout("tcp", t, 5*time.Second); err == nil {
			return c, nil
		}
	}
	return nil, err
}

// track records an open connection of city; lp.mu is held.
func (lp *Proxy) track(city string, c net.Conn) {
	if lp.conns[city] == nil {
		lp.conns[city] = map[net.Conn]struct{}{}
	}
	lp.conns[city][c] = struct{}{}
}

// untrack forgets a connection and closes it.
func (lp *Proxy) untrack(city string, c net.Conn) {
	_ = c.Close()
	lp.mu.Lock()
	delete(lp.conns[city], c)
	lp.mu.Unlock()
}

// cutConns closes every connection of city; lp.mu is held.
func (lp *Proxy) cutConns(city string) {
	for c := range lp.conns[city] {
		_ = c.Close()
	}
}

// partition cuts city off, for d when d > 0.
func (lp *Proxy) partition(city, mode string, d time.Duration) (PartitionRecord, error) {
	if !slices.ContainsFunc(lp.links, func(l LinkRecord) bool { return l.City == city }) {
		return PartitionRecord{}, fmt.Errorf("no city %q: the platform's cities are %s", city, strings.Join(lp.cities(), ", "))
	}
	if mode != PartitionHang && mode != PartitionDrop {
		return PartitionRecord{}, fmt.Errorf("unknown partition mode %q: use %s or %s", mode, PartitionHang, PartitionDrop)
	}
	lp.mu.Lock()
	defer lp.mu.Unlock()
	now := time.Now()
	rec := PartitionRecord{City: city, Mode: mode, Since: now}
	if old, ok := lp.partitions[city]; ok {
		rec.Since = old.Since
	}
	if t := lp.timers[city]; t != nil {
		t.Stop()
		delete(lp.timers, city)
	}
	if d > 0 {
		rec.Until = now.Add(d)
		lp.timers[city] = time.AfterFunc(d, func() { lp.heal(city) })
	}
	lp.partitions[city] = rec
	lp.cutConns(city)
	return rec, nil
}

// heal reconnects city; it reports whether it was partitioned.
func (lp *Proxy) heal(city string) bool {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	_, was := lp.partitions[city]
	delete(lp.partitions, city)
	if t := lp.timers[city]; t != nil {
		t.Stop()
		delete(lp.timers, city)
	}
	// Held connections never carried a byte: close them so clients dial
	// again through the healed link.
	lp.cutConns(city)
	return was
}

// list returns the partitions, by city.
func (lp *Proxy) list() []PartitionRecord {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	out := make([]PartitionRecord, 0, len(lp.partitions))
	for _, p := range lp.partitions {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b PartitionRecord) int { return strings.Compare(a.City, b.City) })
	return out
}

// cities lists the cities with links.
func (lp *Proxy) cities() []string {
	var out []string
	for _, l := range lp.links {
		if l.City != "" && !slices.Contains(out, l.City) {
			out = append(out, l.City)
		}
	}
	return out
}

func (lp *Proxy) handleList(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, lp.list())
}

func (lp *Proxy) handlePartition(w http.ResponseWriter, r *http.Request) {
	city := strings.ToUpper(r.URL.Query().Get("city"))
	mode := r.URL.Query().Get("mode")
	if mode == "" {
		mode = PartitionHang
	}
	var d time.Duration
	if s := r.URL.Query().Get("for"); s != "" {
		var err error
		if d, err = time.ParseDuration(s); err != nil || d < 0 {
			http.Error(w, fmt.Sprintf("for=%q is not a positive duration", s), http.StatusBadRequest)
			return
		}
	}
	rec, err := lp.partition(city, mode, d)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	writeJSON(w, http.StatusOK, rec)
}

func (lp *Proxy) handleHeal(w http.ResponseWriter, r *http.Request) {
	city := strings.ToUpper(r.URL.Query().Get("city"))
	if !slices.Contains(lp.cities(), city) {
		http.Error(w, fmt.Sprintf("no city %q: the platform's cities are %s", city, strings.Join(lp.cities(), ", ")), http.StatusBadRequest)
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"wasPartitioned": lp.heal(city)})
}

// writeJSON answers with v as JSON.
func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// LinkArg renders a link as the link proxy's --link value:
// name,city,port,target[,fallback...]; the city is empty for a link no
// partition cuts.
func LinkArg(l LinkRecord) string {
	return strings.Join(append([]string{l.Name, l.City, strconv.Itoa(l.Port), l.Target}, l.Fallbacks...), ",")
}

// ParseLinkArg parses a --link value.
func ParseLinkArg(s string) (LinkRecord, error) {
	parts := strings.Split(s, ",")
	if len(parts) < 4 {
		return LinkRecord{}, fmt.Errorf("--link %q: want name,city,port,host:port[,host:port...]", s)
	}
	port, err := strconv.Atoi(parts[2])
	if err != nil || port <= 0 || port > 65535 {
		return LinkRecord{}, fmt.Errorf("--link %q: port %q is not a port number", s, parts[2])
	}
	if parts[1] != "" && !cityCode.MatchString(parts[1]) {
		return LinkRecord{}, fmt.Errorf("--link %q: city %q is not a three-letter city code (or empty, for a link no partition cuts)", s, parts[1])
	}
	for _, target := range parts[3:] {
		if _, _, err := net.SplitHostPort(target); err != nil {
			return LinkRecord{}, fmt.Errorf("--link %q: target %q is not host:port", s, target)
		}
	}
	l := LinkRecord{Name: parts[0], City: parts[1], Port: port, Target: parts[3]}
	if len(parts) > 4 {
		l.Fallbacks = parts[4:]
	}
	return l, nil
}

// RunLinkProxy serves the links until ctx ends (the hidden
// `compute-local link-proxy` command a detached platform runs).
func RunLinkProxy(ctx context.Context, control string, linkArgs []string) error {
	links := make([]LinkRecord, 0, len(linkArgs))
	for _, a := range linkArgs {
		l, err := ParseLinkArg(a)
		if err != nil {
			return err
		}
		links = append(links, l)
	}
	lp, err := NewProxy(links, control)
	if err != nil {
		return err
	}
	lp.Serve()
	<-ctx.Done()
	lp.Close()
	return nil
}
