package planes_test

import (
	"context"
	"fmt"
	"os"

	"k8s.io/client-go/kubernetes"

	"github.com/citycells/compute/internal/planes"
)

// A package whose tests share planes starts them from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(run(m)) }
//
// with run as below, returning m.Run() where this example prints. The
// deferred Stop runs before os.Exit because it is deferred in run.
func ExampleStart() {
	env, err := planes.Start(context.Background(), planes.Options{
		Planes: []planes.PlaneSpec{
			{Name: "project", ControllerManager: true, CRDDirs: []string{"config/crd/bases"}},
			{Name: "cell-dfw"},
		},
		Log: os.Stderr,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	defer env.Stop()

	cs := kubernetes.NewForConfigOrDie(env.Plane("project").Config())
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	fmt.Println(v.GitVersion) // return m.Run() here
}
