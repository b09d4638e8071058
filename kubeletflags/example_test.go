package kubeletflags_test

import (
	"flag"
	"fmt"
	"io"
	"os"

	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/nodekit-dev/nodekit/kubeletflags"
)

func Example() {
	fs := flag.NewFlagSet("kubelet", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "the agent implements this one")
	fs.String("runtime", "auto", "an agent's own flag")
	accepted := kubeletflags.AcceptRest(fs) // every other kubelet v1.37 flag

	args := []string{"--kubeconfig=/etc/kubernetes/kubelet.conf", "--rotate-certificates", "-v=2",
		"--feature-gates=KubeletInUserNamespace=true", "--housekeeping_interval=5s"}
	if err := fs.Parse(kubeletflags.NormalizeArgs(fs, args)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	fmt.Println("kubeconfig:", *kubeconfig)
	fmt.Println("accepted without effect:", accepted.Set())
	fmt.Println("not the kubelet's:", kubeletflags.Extra(fs))

	fs = flag.NewFlagSet("kubelet", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // no usage after the error
	kubeletflags.AcceptRest(fs)
	fmt.Println(fs.Parse([]string{"--read-only-port=ten"}))
	fmt.Println(fs.Parse([]string{"--foo"}))

	kc := &kubeletconfigv1beta1.KubeletConfiguration{StaticPodPath: "/etc/kubernetes/manifests",
		EvictionSoft: map[string]string{"memory.available": "1Gi"}}
	fmt.Println("config fields without effect:", kubeletflags.IgnoredConfigFields(kc, []string{"staticPodPath"}))
	// Output:
	// kubeconfig: /etc/kubernetes/kubelet.conf
	// accepted without effect: [feature-gates housekeeping-interval rotate-certificates v]
	// not the kubelet's: [runtime]
	// invalid value "ten" for flag -read-only-port: invalid syntax
	// flag provided but not defined: -foo
	// config fields without effect: [evictionSoft]
}
