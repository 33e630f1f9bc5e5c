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
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

func main() {
	if filepath.Base(os.Args[0]) == "pause" {
		pause()
		return
	}
	exit := flag.Int("exit", -1, "exit at once with this code instead of serving (a crashing container, on demand)")
	flag.Parse()
	if *exit >= 0 {
		fmt.Fprintf(os.Stderr, "compute-hello exiting with code %d as asked (-exit)\n", *exit)
		os.Exit(*exit)
	}
	if err := serve(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
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
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
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
