package logs

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/citycells/compute/internal/cli/cmdutil"
)

// ended is a stream that finished: its instance, when, whether it ever
// opened, and its error.
type ended struct {
	ref    instanceRef
	at     time.Time
	opened bool
	err    error
}

// streamer reads the instances' streams and writes their lines whole,
// one at a time, so lines of different instances never mix.
type streamer struct {
	o        *Options
	workload string
	out      io.Writer
	errOut   io.Writer

	mu     sync.Mutex // guards out and errOut
	active map[string]instanceRef
	first  map[string]bool  // the instances of the first look
	last   map[string]ended // the last end of every instance not active
	done   chan ended
	wg     sync.WaitGroup
}

// newStreamer returns the streamer of o.
func newStreamer(o *Options, workload string) *streamer {
	return &streamer{
		o: o, workload: workload, out: o.Factory.Streams.Out, errOut: o.Factory.Streams.ErrOut,
		active: map[string]instanceRef{}, first: map[string]bool{}, last: map[string]ended{}, done: make(chan ended),
	}
}

// request is the log request of a first stream.
func (s *streamer) request() logRequest {
	return logRequest{
		follow: s.o.Follow, previous: s.o.Previous, timestamps: s.o.Timestamps,
		tail: s.o.Tail, since: s.o.Since, container: s.o.Container,
	}
}

// run streams targets: without --follow until every stream ends, with it
// until ctx ends (Ctrl-C), following replacements.
func (s *streamer) run(ctx context.Context, targets []instanceRef) error {
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		s.wg.Wait()
	}()
	for _, t := range targets {
		s.first[t.name] = true
		s.start(ctx, t, s.request())
	}
	if !s.o.Follow {
		return s.collect(len(targets))
	}
	return s.follow(ctx)
}

// collect waits for n streams and reports their errors together.
func (s *streamer) collect(n int) error {
	var errs []error
	for range n {
		e := <-s.done
		if e.err != nil {
			errs = append(errs, s.streamError(e))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return cmdutil.Failf("%w", errors.Join(errs...))
}

// streamError names the instance of a failed stream when there are many.
func (s *streamer) streamError(e ended) error {
	if s.workload == "" {
		return e.err
	}
	return fmt.Errorf("instance %s: %w", e.ref.name, e.err)
}

// follow keeps every instance followed until ctx ends: a stream that
// could not open at first fails the command (an unreachable city fails
// fast); one that ends is looked at again every Retry.
func (s *streamer) follow(ctx context.Context) error {
	tick := time.NewTicker(s.o.Retry)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case e := <-s.done:
			if _, seen := s.last[e.ref.name]; !seen && s.first[e.ref.name] && !e.opened && e.err != nil {
				return cmdutil.Failf("%w", s.streamError(e))
			}
			delete(s.active, e.ref.name)
			s.last[e.ref.name] = e
		case <-tick.C:
			if err := s.rescan(ctx); err != nil {
				s.warnf("%v", err)
			}
		}
	}
}

// rescan looks for instances to follow: ended ones again (a new
// container, or a replacement of the same name) and, for a Workload, new
// ones, up to --max-log-requests.
func (s *streamer) rescan(ctx context.Context) error {
	refs, err := s.current(ctx)
	if err != nil {
		return err
	}
	for _, ref := range refs {
		if _, ok := s.active[ref.name]; ok || len(s.active) >= s.o.MaxLogRequests {
			continue
		}
		req := s.request()
		prev, seen := s.last[ref.name]
		switch {
		case !seen:
			s.warnf("following new instance %s", ref.name)
		case prev.ref.uid != ref.uid:
			s.warnf("instance %s was replaced; following the new one", ref.name)
			req.tail, req.since = -1, 0
		default:
			// The same instance: its container restarted, or the stream
			// broke; go on from where it ended.
			if prev.opened {
				s.warnf("the stream of instance %s ended; following it again", ref.name)
			}
			req.tail, req.sinceTime = -1, prev.at
		}
		s.start(ctx, ref, req)
	}
	return nil
}

// current lists the instances to follow now.
func (s *streamer) current(ctx context.Context) ([]instanceRef, error) {
	if s.workload != "" {
		return s.o.source.instances(ctx, s.workload)
	}
	ref, found, err := s.o.source.instance(ctx, s.o.Name)
	if err != nil || !found {
		return nil, err
	}
	return []instanceRef{ref}, nil
}

// start opens and copies one stream in the background.
func (s *streamer) start(ctx context.Context, ref instanceRef, req logRequest) {
	s.active[ref.name] = ref
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		e := ended{ref: ref}
		rc, err := s.o.source.open(ctx, ref.name, req)
		if err == nil {
			e.opened = true
			err = s.copy(rc, ref.name)
			_ = rc.Close()
		}
		e.at, e.err = time.Now(), err
		if ctx.Err() != nil {
			e.err = nil
		}
		select {
		case s.done <- e:
		case <-ctx.Done():
		}
	}()
}

// copy writes the stream's lines whole, with the prefix when asked.
func (s *streamer) copy(r io.Reader, name string) error {
	br := bufio.NewReaderSize(r, 64*1024)
	prefix := []byte("[" + name + "] ")
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			if !bytes.HasSuffix(line, []byte("\n")) {
				line = append(line, '\n')
			}
			s.mu.Lock()
			if s.o.Prefix {
				_, _ = s.out.Write(prefix)
			}
			_, _ = s.out.Write(line)
			s.mu.Unlock()
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// warnf writes a note on stderr.
func (s *streamer) warnf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, _ = fmt.Fprintf(s.errOut, format+"\n", args...)
}
