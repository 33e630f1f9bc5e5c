package deploy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/catalog"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/cli/plan"
	"github.com/citycells/compute/test/clitest"
)

func TestParsePort(t *testing.T) {
	for in, tc := range map[string]struct {
		want    Port
		wantErr bool
	}{
		"8080":                     {want: Port{Name: "port-8080", Port: 8080, Protocol: corev1.ProtocolTCP}},
		"http:8080":                {want: Port{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}},
		"dns:53/udp":               {want: Port{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}},
		"http:70000":               {wantErr: true},
		"HTTP:80":                  {wantErr: true},
		"http:80/QUIC":             {wantErr: true},
		"averyveryverylongname:80": {wantErr: true},
		"":                         {wantErr: true},
	} {
		t.Run(in, func(t *testing.T) {
			got, err := ParsePort(in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v", err)
			}
			if !tc.wantErr && got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestParseEnv(t *testing.T) {
	for in, tc := range map[string]struct {
		want    EnvChange
		wantErr bool
	}{
		"FOO=bar": {want: EnvChange{Name: "FOO", Value: "bar"}},
		"URL=a=b": {want: EnvChange{Name: "URL", Value: "a=b"}},
		"EMPTY=":  {want: EnvChange{Name: "EMPTY"}},
		"FOO-":    {want: EnvChange{Name: "FOO", Remove: true}},
		"FOO":     {wantErr: true},
		"=bar":    {wantErr: true},
	} {
		t.Run(in, func(t *testing.T) {
			got, err := ParseEnv(in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v", err)
			}
			if !tc.wantErr && got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestParseCities(t *testing.T) {
	got, err := ParseCities([]string{"dfw,LHR", "lhr", " sin "})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"DFW", "LHR", "SIN"}, got); diff != "" {
		t.Error(diff)
	}
	if _, err := ParseCities([]string{"Dallas"}); err == nil {
		t.Error("a city name that is not a code must be refused")
	}
}

func TestNameFromImage(t *testing.T) {
	for image, want := range map[string]string{
		"ghcr.io/acme/web:1.2":           "web",
		"nginx":                          "nginx",
		"registry:5000/team/My_App:1":    "my-app",
		"ghcr.io/acme/api@sha256:abcdef": "api",
	} {
		if got := nameFromImage(image); got != want {
			t.Errorf("nameFromImage(%q) = %q, want %q", image, got, want)
		}
	}
}

// parse runs the deploy command line through flag parsing, Complete and
// Validate, never touching a server.
func parse(t *testing.T, args ...string) (*Options, error) {
	t.Helper()
	f := &cmdutil.Factory{}
	c, o := newCommand(f)
	f.AddGlobalFlags(c)
	return o, cmdutil.Parse(c, o, args)
}

func TestDeployFlags(t *testing.T) {
	manifest := filepath.Join(t.TempDir(), "web.yaml")
	if err := os.WriteFile(manifest, []byte(manifestYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		args     []string
		wantCode int
		check    func(t *testing.T, o *Options)
	}{
		"a name, an image and cities": {[]string{"web", "--image", "ghcr.io/acme/web:1", "--city", "dfw,lhr", "--min", "2"}, cmdutil.ExitOK,
			func(t *testing.T, o *Options) {
				if o.Name != "web" || strings.Join(o.Cities, ",") != "DFW,LHR" || o.Min != 2 {
					t.Errorf("options %+v", o)
				}
			}},
		"the name comes from the image": {[]string{"--image", "ghcr.io/acme/shop-api:2", "--city", "DFW"}, cmdutil.ExitOK,
			func(t *testing.T, o *Options) {
				if o.Name != "shop-api" {
					t.Errorf("name %q", o.Name)
				}
			}},
		"the change cause records the flags": {[]string{"web", "--image", "img:1", "-y", "--timeout", "1m"}, cmdutil.ExitOK,
			func(t *testing.T, o *Options) {
				if o.cause != "deploy web --image=img:1" {
					t.Errorf("cause %q", o.cause)
				}
			}},
		"a manifest": {[]string{"-f", manifest}, cmdutil.ExitOK, func(t *testing.T, o *Options) {
			if o.workloadName() != "web" || o.manifest.Spec.Placements[0].CityCodes[0] != "DFW" {
				t.Errorf("manifest %+v", o.manifest)
			}
		}},
		"nothing to deploy is usage":               {nil, cmdutil.ExitUsage, nil},
		"a malformed --location-selector is usage": {[]string{"web", "--location-selector", "region"}, cmdutil.ExitUsage, nil},
		"--city and --location together is usage":  {[]string{"web", "--city", "DFW", "--location", "dfw-a"}, cmdutil.ExitUsage, nil},
		"a manifest and flags is usage":            {[]string{"-f", manifest, "--image", "x"}, cmdutil.ExitUsage, nil},
		"a name other than the manifest's":         {[]string{"api", "-f", manifest}, cmdutil.ExitUsage, nil},
		"a missing manifest is a failure":          {[]string{"-f", "/nonexistent.yaml"}, cmdutil.ExitFailure, nil},
		"a bad port is usage":                      {[]string{"web", "--port", "http"}, cmdutil.ExitUsage, nil},
		"a bad env is usage":                       {[]string{"web", "--env", "FOO"}, cmdutil.ExitUsage, nil},
		"a bad city is usage":                      {[]string{"web", "--city", "Dallas"}, cmdutil.ExitUsage, nil},
		"a negative min is usage":                  {[]string{"web", "--min", "-1"}, cmdutil.ExitUsage, nil},
		"a max below min is usage":                 {[]string{"web", "--min", "3", "--max", "2"}, cmdutil.ExitUsage, nil},
		"an unknown policy is usage":               {[]string{"web", "--policy", "Random"}, cmdutil.ExitUsage, nil},
		"a zero timeout is usage":                  {[]string{"web", "--timeout", "0s"}, cmdutil.ExitUsage, nil},
		"two names are usage":                      {[]string{"web", "api"}, cmdutil.ExitUsage, nil},
	} {
		t.Run(name, func(t *testing.T) {
			o, err := parse(t, tc.args...)
			if got := cmdutil.ExitCode(err); got != tc.wantCode {
				t.Fatalf("exit code %d (%v), want %d", got, err, tc.wantCode)
			}
			if tc.check != nil {
				tc.check(t, o)
			}
		})
	}
}

// manifestYAML is a valid Workload manifest.
const manifestYAML = `# web in two cities
apiVersion: compute.datumapis.com/v1alpha
kind: Workload
metadata:
  name: web
spec:
  template:
    spec:
      runtime:
        resources:
          instanceType: datumcloud/d1-standard-2
        sandbox:
          containers:
          - name: app
            image: ghcr.io/acme/web:1.0
  placements:
  - name: default
    cityCodes: [DFW, LHR]
    scaleSettings:
      minReplicas: 2
`

func TestReadManifestSaysWhatIsWrong(t *testing.T) {
	for name, tc := range map[string]struct {
		content string
		want    string
	}{
		"an unknown field": {strings.Replace(manifestYAML, "minReplicas", "minReplica", 1), `unknown field "spec.placements[0].scaleSettings.minReplica"`},
		"another kind":     {strings.Replace(manifestYAML, "kind: Workload", "kind: Deployment", 1), `kind "Deployment": deploy takes apiVersion compute.datumapis.com/v1alpha kind Workload`},
		"two documents":    {manifestYAML + "---\n" + strings.Replace(manifestYAML, "name: web", "name: api", 1), "holds 2 documents: give one Workload"},
		"a name twice":     {manifestYAML + "---\n" + manifestYAML, "standard input document 2: workload web is also document 1; give each workload once"},
		"nothing":          {"# just a comment\n", "is empty"},
		"not yaml":         {"{{{", "is not valid YAML or JSON"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ReadManifest("-", []byte(tc.content))
			if err == nil || !strings.Contains(err.Error(), tc.want) || cmdutil.ExitCode(err) != cmdutil.ExitFailure {
				t.Errorf("got %v, want a failure containing %q", err, tc.want)
			}
		})
	}
}

func TestReadManifestsTakesSeveralDocumentsAndNamesTheBadOne(t *testing.T) {
	api := strings.Replace(manifestYAML, "name: web", "name: api", 1)
	ws, err := ReadManifests("-", []byte("# two workloads\n---\n"+manifestYAML+"---\n"+api+"---\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 2 || ws[0].Name != "web" || ws[1].Name != "api" {
		t.Fatalf("got %d workloads: %+v", len(ws), ws)
	}
	bad := strings.Replace(api, "minReplicas", "minReplica", 1)
	_, err = ReadManifests("apps.yaml", nil)
	if err == nil || !strings.Contains(err.Error(), "cannot read apps.yaml") {
		t.Errorf("a missing file: %v", err)
	}
	_, err = ReadManifests("-", []byte(manifestYAML+"---\n"+bad))
	if want := `standard input document 2: strict decoding error: unknown field "spec.placements[0].scaleSettings.minReplica"`; err == nil ||
		!strings.Contains(err.Error(), want) || cmdutil.ExitCode(err) != cmdutil.ExitFailure {
		t.Errorf("got %v, want a failure containing %q", err, want)
	}
}

func TestFlagsBuildTheWorkload(t *testing.T) {
	existing := clitest.NewWorkload("web").Env("MODE", "prod").Env("DEBUG", "1").Build()
	for name, tc := range map[string]struct {
		args     []string
		existing *computev1alpha.Workload
		want     func(w *computev1alpha.Workload)
		wantErr  string
	}{
		"a new workload from flags": {
			args: []string{"web", "--image", "ghcr.io/acme/web:1.0", "--city", "DFW,LHR", "--min", "2", "--port", "http:8080"},
			want: func(w *computev1alpha.Workload) {
				// A new Workload gets Datum's spelling of the default type.
				w.Spec.Template.Spec.Runtime.Resources.InstanceType = catalog.DefaultInstanceType
			},
		},
		"a new workload needs an image and cities": {
			args: []string{"web", "--min", "2"}, wantErr: "needs --image and --city",
		},
		"an update changes only what is given": {
			args: []string{"web", "--image", "ghcr.io/acme/web:1.1", "--env", "DEBUG-", "--env", "MODE=staging", "--env", "NEW=1"}, existing: existing,
			want: func(w *computev1alpha.Workload) {
				c := &w.Spec.Template.Spec.Runtime.Sandbox.Containers[0]
				c.Image = "ghcr.io/acme/web:1.1"
				c.Env = []computev1alpha.EnvVar{{Name: "MODE", Value: "staging"}, {Name: "NEW", Value: "1"}}
			},
		},
		"cities and replicas replace the placement's": {
			args: []string{"web", "--city", "SIN,DFW", "--min", "3"}, existing: existing,
			want: func(w *computev1alpha.Workload) {
				w.Spec.Placements[0].CityCodes = []string{"SIN", "DFW"}
				w.Spec.Placements[0].ScaleSettings.MinReplicas = 3
			},
		},
		"a new placement is added with its cities": {
			args: []string{"web", "--placement", "eu", "--city", "AMS", "--min", "1"}, existing: existing,
			want: func(w *computev1alpha.Workload) {
				w.Spec.Placements = append(w.Spec.Placements, computev1alpha.WorkloadPlacement{Name: "eu", CityCodes: []string{"AMS"},
					ScaleSettings: computev1alpha.HorizontalScaleSettings{MinReplicas: 1}})
			},
		},
		"--location names the Locations and replaces the cities": {
			args: []string{"web", "--location", "dfw-a,lhr-1", "--location", "dfw-a"}, existing: existing,
			want: func(w *computev1alpha.Workload) {
				w.Spec.Placements[0].CityCodes = nil
				w.Spec.Placements[0].Locations = []computev1alpha.PlacementLocation{{Name: "dfw-a"}, {Name: "lhr-1"}}
			},
		},
		"--location-selector selects by topology": {
			args: []string{"web", "--location-selector", "topology.datum.net/region=us-south,tier=edge"}, existing: existing,
			want: func(w *computev1alpha.Workload) {
				w.Spec.Placements[0].CityCodes = nil
				w.Spec.Placements[0].LocationSelector = &metav1.LabelSelector{MatchLabels: map[string]string{
					"topology.datum.net/region": "us-south", "tier": "edge"}}
			},
		},
		"several placements need --placement": {
			args: []string{"web", "--min", "3"}, existing: clitest.NewWorkload("web").AddPlacement("eu", 1, "AMS").Build(),
			wantErr: "choose one with --placement",
		},
	} {
		t.Run(name, func(t *testing.T) {
			o, err := parse(t, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			var existing *computev1alpha.Workload
			if tc.existing != nil {
				existing = tc.existing.DeepCopy()
			}
			got, err := o.desired(existing, "default")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := clitest.NewWorkload("web").Build()
			want.Spec.RevisionHistoryLimit = nil
			want.Spec.Placements[0].ScaleSettings.InstanceManagementPolicy = ""
			if tc.existing != nil {
				want = tc.existing.DeepCopy()
			}
			tc.want(want)
			if diff := cmp.Diff(want.Spec, got.Spec); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
		})
	}
}

// invalid is the server's refusal of workload web for errs, as a
// validating webhook answers it.
func invalid(errs field.ErrorList) []metav1.StatusCause {
	err := apierrors.NewInvalid(computev1alpha.GroupVersion.WithKind(computev1alpha.WorkloadKind).GroupKind(), "web", errs)
	return err.Status().Details.Causes
}

func TestTheServersFieldErrorsNameTheFlag(t *testing.T) {
	placement := field.NewPath("spec", "placements").Index(0)
	causes := invalid(field.ErrorList{
		field.Invalid(placement.Child("locationSelector", "matchExpressions").Index(0).Child("values").Index(1), "LAX",
			"city LAX is not enabled for this project; enabled cities: DFW, LHR"),
		field.Invalid(field.NewPath("spec", "template", "spec", "runtime", "sandbox", "containers").Index(0).Child("image"), "",
			"must be a fully qualified image"),
		field.Invalid(placement.Child("scaleSettings", "minReplicas"), int32(5000), "must be between 0 and 1000"),
		field.Required(placement.Child("scaleSettings", "instanceManagementPolicy"), "OrderedReady or Parallel"),
		field.Duplicate(placement.Child("locations").Index(1).Child("name"), "dfw-a"),
		field.Invalid(field.NewPath("spec", "template", "spec", "volumes"), "x", "volumes are unused"),
	})
	want := "  --location-selector LAX: city LAX is not enabled for this project; enabled cities: DFW, LHR\n" +
		"  --image: must be a fully qualified image\n" +
		"  --min: 5000: must be between 0 and 1000\n" +
		"  --policy: OrderedReady or Parallel\n" +
		"  --location dfw-a: Duplicate value: \"dfw-a\"\n" +
		"  spec.template.spec.volumes: Invalid value: \"x\": volumes are unused"
	if diff := cmp.Diff(want, describeCauses(causes, flagOf)); diff != "" {
		t.Error(diff)
	}
	o := &Options{changed: changeCity}
	if got := describeCauses(causes[:1], o.flagOf); !strings.HasPrefix(got, "  --city LAX: ") {
		t.Errorf("a selector written by --city names --city: %s", got)
	}
	o.manifest = clitest.NewWorkload("web").Build()
	if got := describeCauses(causes[1:2], o.flagOf); got != "  spec.template.spec.runtime.sandbox.containers[0].image: Invalid value: \"\": must be a fully qualified image" {
		t.Errorf("a manifest's errors name the fields: %s", got)
	}
}

func TestThePlan(t *testing.T) {
	newWeb := clitest.NewWorkload("web").Env("MODE", "prod").Build()
	changed := newWeb.DeepCopy()
	changed.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Image = "ghcr.io/acme/web:1.1"
	changed.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Env = []computev1alpha.EnvVar{{Name: "MODE", Value: "staging"}}
	changed.Spec.Placements[0].CityCodes = []string{"DFW", "SIN"}
	changed.Spec.Placements[0].ScaleSettings.MinReplicas = 3
	target := cmdutil.Target{Project: "p1"}
	for name, tc := range map[string]struct {
		before, after *computev1alpha.Workload
	}{
		"new":    {after: newWeb},
		"update": {before: newWeb, after: changed},
	} {
		t.Run(name, func(t *testing.T) {
			var before *computev1alpha.WorkloadSpec
			if tc.before != nil {
				before = &tc.before.Spec
			}
			var b strings.Builder
			RenderPlan(&b, tc.after, target, plan.Compute(before, &tc.after.Spec))
			clitest.Golden(t, "plan-"+name, b.String())
		})
	}
}
