// Command compute-hello is the local platform's demo workload: a small HTTP
// server that answers with its hostname and its city, so a newcomer's first
// deploy has something to curl. `compute-local up` builds it offline and
// pushes it to the platform's registry as hello:1.
//
//	GET /            hello from <hostname> in <city>
//	GET /?env=NAME   ... and the value of the environment variable NAME
//	GET /?file=PATH  ... and the contents of the file PATH (a mounted
//	                 ConfigMap or Secret key, for instance)
//	GET /healthz     ok
//	GET /burn?seconds=S&cores=C
//	                 202, then keeps C cores (default 1) busy for S seconds
//	                 (default 30, at most 600) in the background: a load
//	                 for metrics-server and the autoscaler to see. At most
//	                 maxBurners cores burn at once; more answers 429.
//
// Every request to / is logged on stdout, one line each ("GET /?env=X
// from 10.0.0.1:5000"); /healthz and /burn are not.
//
// With -cat FILE it prints the file and exits (the image has nothing but
// this binary, /hello: `exec INSTANCE -- /hello -cat /etc/db/password`).
// With -sh it is a tiny scripted shell instead (`exec -it INSTANCE -- /hello
// -sh`): echo, cat, stty size and exit, one command a line, a "$ " prompt on
// a terminal (see shell).
//
// With -eat MiB it takes that much memory, touching every page, and holds
// it: a container killed for memory (OOMKilled) when its limit is lower.
//
// It listens on $PORT (default 8080). With -exit N it exits at once with
// code N instead: a container that crashes, on demand. The city is $COMPUTE_CITY_CODE, which
// the Kubernetes runtime provider sets in every container, else $CITY.
//
// The same binary is the platform's pod sandbox ("pause") image: run under
// the name pause (the image's entrypoint /pause) it only waits for a signal,
// which is all a sandbox container does.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/term"
)

func main() {
	if filepath.Base(os.Args[0]) == "pause" {
		pause()
		return
	}
	exit := flag.Int("exit", -1, "exit at once with this code instead of serving (a crashing container, on demand)")
	cat := flag.String("cat", "", "print this file (/dev/stdin for standard input) and exit instead of serving: the image has no shell, and exec needs a command")
	sh := flag.Bool("sh", false, "run a tiny shell on standard input instead of serving (echo, cat, stty size, exit [N]): for exec -it")
	eat := flag.Int("eat", 0, "take this many MiB of memory, touching every page, and hold it instead of serving: a container killed for memory under a lower limit")
	flag.Parse()
	if *eat > 0 {
		eatMemory(*eat, os.Stderr)
		return
	}
	if *cat != "" {
		os.Exit(catFile(*cat))
	}
	if *sh {
		os.Exit(runShell())
	}
	if *exit >= 0 {
		fmt.Fprintf(os.Stderr, "compute-hello exiting with code %d as asked (-exit)\n", *exit)
		os.Exit(*exit)
	}
	if err := serve(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// catFile copies path to stdout and returns the exit code.
func catFile(path string) int {
	f, err := os.Open(filepath.Clean(path))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = f.Close() }()
	if _, err := io.Copy(os.Stdout, f); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// runShell runs the scripted shell on the standard streams, with a prompt
// when standard input is a terminal.
func runShell() int {
	fd := int(os.Stdin.Fd())
	sh := &shell{out: os.Stdout, errOut: os.Stderr, size: func() (int, int, error) {
		cols, rows, err := term.GetSize(fd)
		return rows, cols, err
	}}
	if term.IsTerminal(fd) {
		sh.prompt = "$ "
	}
	return sh.run(os.Stdin)
}

// serve answers on $PORT until SIGINT or SIGTERM.
func serve() error {
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := &http.Server{Addr: ":" + port, Handler: handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	fmt.Fprintf(os.Stderr, "compute-hello listening on :%s\n", port)
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// handler answers the demo's requests.
func handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = fmt.Fprintln(w, "ok") })
	mux.Handle("/burn", &burner{})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		// One line a request on stdout: something for `logs -f` to follow.
		_, _ = fmt.Fprintf(os.Stdout, "%s %s from %s\n", r.Method, r.URL.RequestURI(), r.RemoteAddr)
		host, _ := os.Hostname()
		_, _ = fmt.Fprintf(w, "hello from %s in %s\n", host, city())
		if name := r.URL.Query().Get("env"); name != "" {
			_, _ = fmt.Fprintf(w, "%s=%s\n", name, os.Getenv(name))
		}
		if path := r.URL.Query().Get("file"); path != "" {
			data, err := os.ReadFile(filepath.Clean(path))
			if err != nil {
				http.Error(w, err.Error(), http.StatusNotFound)
				return
			}
			_, _ = fmt.Fprintf(w, "%s:\n%s\n", path, data)
		}
	})
	return mux
}

// city is the city the instance runs in, from the environment.
func city() string {
	for _, k := range []string{"COMPUTE_CITY_CODE", "CITY"} {
		if v := os.Getenv(k); v != "" {
			return v
		}
	}
	return "an unknown city"
}

// pause waits for SIGINT or SIGTERM, as a pod sandbox's container does.
func pause() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
}

// Bounds of /burn.
const (
	maxBurnSeconds = 600
	// maxBurners is how many cores may burn at once, over all requests.
	maxBurners = 16
)

// burner keeps cores busy on request (GET /burn).
type burner struct {
	// active counts the goroutines burning now.
	active atomic.Int64
}

// ServeHTTP starts burning and answers at once; it refuses bad or
// unbounded requests.
func (b *burner) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	seconds, err := queryInt(r, "seconds", 30, 1, maxBurnSeconds)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	cores, err := queryInt(r, "cores", 1, 1, maxBurners)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if n := b.active.Add(int64(cores)); n > maxBurners {
		b.active.Add(-int64(cores))
		http.Error(w, fmt.Sprintf("already burning %d cores; at most %d at once", n-int64(cores), maxBurners), http.StatusTooManyRequests)
		return
	}
	deadline := time.Now().Add(time.Duration(seconds) * time.Second)
	for range cores {
		go func() {
			defer b.active.Add(-1)
			spin(deadline)
		}()
	}
	w.WriteHeader(http.StatusAccepted)
	_, _ = fmt.Fprintf(w, "burning %d core(s) for %ds\n", cores, seconds)
}

// spin keeps one core busy until deadline.
func spin(deadline time.Time) {
	x := uint64(1)
	for time.Now().Before(deadline) {
		for range 100_000 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	sink.Store(x)
}

// sink keeps spin's arithmetic from being optimised away.
var sink atomic.Uint64

// queryInt reads an integer query parameter within [lo, hi], def when it
// is absent.
func queryInt(r *http.Request, name string, def, lo, hi int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%s must be a whole number from %d to %d, not %q", name, lo, hi, v)
	}
	return n, nil
}
