package cmdutil

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
)

// Environment variables datumctl sets before it runs a plugin.
const (
	EnvOrg               = "DATUM_ORG"
	EnvProject           = "DATUM_PROJECT"
	EnvAPIHost           = "DATUM_API_HOST"
	EnvPluginAPIVersion  = "DATUM_PLUGIN_API_VERSION"
	EnvCredentialsHelper = "DATUM_CREDENTIALS_HELPER"
	EnvSession           = "DATUM_SESSION"
)

// PluginAPIVersion is the datumctl plugin contract version this binary
// implements.
const PluginAPIVersion = 1

// PluginContext is the Datum context datumctl hands a plugin through the
// environment.
type PluginContext struct {
	// Org is the active organization (DATUM_ORG).
	Org string
	// Project is the active project (DATUM_PROJECT); may be empty.
	Project string
	// APIHost is the API host (DATUM_API_HOST), e.g. api.datum.net. A value
	// with a scheme (http://127.0.0.1:8080) is used as given.
	APIHost string
	// APIVersion is the plugin contract version of the host
	// (DATUM_PLUGIN_API_VERSION).
	APIVersion string
	// CredentialsHelper is the datumctl binary to ask for tokens
	// (DATUM_CREDENTIALS_HELPER).
	CredentialsHelper string
	// Session is the datumctl session (DATUM_SESSION); may be empty.
	Session string
}

// ReadPluginContext reads the DATUM_* variables through getenv.
func ReadPluginContext(getenv func(string) string) PluginContext {
	return PluginContext{
		Org:               getenv(EnvOrg),
		Project:           getenv(EnvProject),
		APIHost:           getenv(EnvAPIHost),
		APIVersion:        getenv(EnvPluginAPIVersion),
		CredentialsHelper: getenv(EnvCredentialsHelper),
		Session:           getenv(EnvSession),
	}
}

// Active reports whether datumctl ran the plugin with a Datum context:
// an API host is set.
func (p PluginContext) Active() bool { return p.APIHost != "" }

// LoggedOut reports whether datumctl ran the plugin without a login: the
// plugin API version is set but the API host is empty.
func (p PluginContext) LoggedOut() bool { return p.APIVersion != "" && p.APIHost == "" }

// ServerURL returns the project control-plane URL of project:
// https://<host>/apis/resourcemanager.miloapis.com/v1alpha1/projects/<project>/control-plane.
func (p PluginContext) ServerURL(project string) string {
	base := strings.TrimRight(p.APIHost, "/")
	if !strings.Contains(base, "://") {
		base = "https://" + base
	}
	return base + "/apis/resourcemanager.miloapis.com/v1alpha1/projects/" + project + "/control-plane"
}

// HelperArgs are the arguments the credentials helper is run with.
func (p PluginContext) HelperArgs() []string {
	args := []string{"auth", "get-token"}
	if p.Session != "" {
		args = append(args, "--session", p.Session)
	}
	return args
}

// CommandRunner runs a program and returns its standard output; the error
// carries its standard error.
type CommandRunner func(ctx context.Context, name string, args ...string) ([]byte, error)

// ExecRunner runs programs with os/exec.
func ExecRunner(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return nil, fmt.Errorf("%w: %s", err, msg)
		}
		return nil, err
	}
	return stdout.Bytes(), nil
}

// TokenSource gets a token from the credentials helper the first time one
// is needed and keeps it until the API rejects it. The plugin never reads
// a token from the environment.
type TokenSource struct {
	// Context is the plugin context naming the helper and session.
	Context PluginContext
	// Run runs the helper.
	Run CommandRunner

	mu    sync.Mutex
	token string
}

// Token returns the cached token or asks the helper for one.
func (t *TokenSource) Token(ctx context.Context) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.token != "" {
		return t.token, nil
	}
	if t.Context.CredentialsHelper == "" {
		return "", &ExitError{Code: ExitFailure,
			Err:   errors.New("datumctl did not say how to get a token (DATUM_CREDENTIALS_HELPER is empty)"),
			Hints: []string{"Run this command as `datumctl compute ...`, or pass --kubeconfig to use a cluster directly."}}
	}
	out, err := t.Run(ctx, t.Context.CredentialsHelper, t.Context.HelperArgs()...)
	if err != nil {
		return "", &ExitError{Code: ExitFailure,
			Err:   fmt.Errorf("could not get a Datum token from `%s %s`: %w", t.Context.CredentialsHelper, strings.Join(t.Context.HelperArgs(), " "), err),
			Hints: []string{"Log in again with: datumctl login"}}
	}
	tok := strings.TrimSpace(string(out))
	if tok == "" {
		return "", &ExitError{Code: ExitFailure, Err: errors.New("the credentials helper returned an empty token"),
			Hints: []string{"Log in again with: datumctl login"}}
	}
	t.token = tok
	return tok, nil
}

// Reject forgets tok if it is still the cached token: of several requests
// rejected with the same expired token, only the first makes the next one
// ask the helper.
func (t *TokenSource) Reject(tok string) {
	t.mu.Lock()
	if t.token == tok {
		t.token = ""
	}
	t.mu.Unlock()
}

// bearerTransport adds the token of a TokenSource to every request.
type bearerTransport struct {
	source *TokenSource
	next   http.RoundTripper
}

// RoundTrip sends req with an Authorization header. datumctl's tokens are
// short-lived: a 401 drops the rejected token and the request is sent once
// more with a fresh one from the helper; a second 401 is the answer.
func (b *bearerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	tok, err := b.source.Token(req.Context())
	if err != nil {
		return nil, err
	}
	resp, err := b.send(req, tok)
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		return resp, err
	}
	b.source.Reject(tok)
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return resp, nil // the body cannot be sent twice
	}
	fresh, err := b.source.Token(req.Context())
	if err != nil {
		return resp, nil
	}
	retry := req.Clone(req.Context())
	if req.GetBody != nil {
		if retry.Body, err = req.GetBody(); err != nil {
			return resp, nil
		}
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	resp, err = b.send(retry, fresh)
	if err == nil && resp.StatusCode == http.StatusUnauthorized {
		b.source.Reject(fresh)
	}
	return resp, err
}

// send sends req with tok.
func (b *bearerTransport) send(req *http.Request, tok string) (*http.Response, error) {
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+tok)
	return b.next.RoundTrip(r)
}

// WrapTransport returns a rest.Config transport wrapper that authenticates
// with source.
func WrapTransport(source *TokenSource) func(http.RoundTripper) http.RoundTripper {
	return func(rt http.RoundTripper) http.RoundTripper {
		return &bearerTransport{source: source, next: rt}
	}
}
