// Package planes starts and stops real Kubernetes control planes: one shared
// etcd per Environment and, per Plane, a kube-apiserver (with its own
// --etcd-prefix) and optionally a kube-controller-manager. Integration tests
// use it today; the local platform (compute-local) uses the same code path to
// run a project plane, the Karmada federation apiserver and the city cells.
//
// The binaries come from internal/toolchain (`make tools` builds them). Every
// certificate is generated in Go: one CA per Environment signs the serving
// certificate of each plane, the admin client and any identity minted with
// Plane.ClientConfig; a separate front-proxy CA backs aggregation when a plane
// asks for it.
//
// Start brings every plane up concurrently. For each plane it waits for
// /readyz, installs the plane's CRDs and waits until they are established and
// discoverable, and only then starts its controller manager, whose garbage
// collector discovers new kinds only every 30 s. Stop terminates every
// process it started (SIGTERM to the process group, SIGKILL after a grace
// period), waits for them and removes the directory Start created.
//
// Processes are started in their own process group and, unless
// Options.Detach is set, with Pdeathsig SIGKILL, so they die with the caller
// even when a test binary panics or is killed. Each process writes to
// <dir>/logs/<component>.log; a process that exits while Start waits for it
// fails Start with the tail of its log.
//
// In a single test:
//
//	env := planes.StartForTest(t, planes.Options{Planes: []planes.PlaneSpec{{Name: "project"}}})
//	cfg := env.Plane("project").Config()
//
// In a package whose tests share one environment:
//
//	var env *planes.Environment
//
//	func TestMain(m *testing.M) { os.Exit(run(m)) }
//
//	func run(m *testing.M) int {
//		var err error
//		env, err = planes.Start(context.Background(), planes.Options{
//			Planes: []planes.PlaneSpec{{Name: "project", ControllerManager: true}},
//			Log:    os.Stderr,
//		})
//		if err != nil {
//			fmt.Fprintln(os.Stderr, err)
//			return 1
//		}
//		defer env.Stop() // deferred in run, not TestMain: os.Exit skips defers
//		return m.Run()
//	}
//
// The integration suites under test/integration do exactly that through
// their fixtures package's Run, which also sets the logger, builds clients
// and stops what the suite started beside its tests.
package planes
