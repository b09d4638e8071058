//go:build nodekit_conformance_suite

// Package conformance is the Kubernetes e2e suite cut down to the specs that
// judge a node: k8s.io/kubernetes/test/e2e without its test sources except
// test/e2e/common (node, storage, network), where every [NodeConformance]
// spec lives, and test/e2e/node, which holds the node's [Conformance] specs
// that are not [NodeConformance] (pod generation and observedGeneration,
// "Pods Extended"; it has no [NodeConformance] spec). hack/conformance.sh
// builds it with `go test -c` in a scratch module that requires
// k8s.io/kubernetes (hack/lib-k8s-build.sh); the build tag keeps it out of
// nodekit's own module. Flags, suite name and spec texts are those of
// e2e.test, so a focus regex written for one selects the same specs in the
// other; the build compiles a fraction of e2e.test's packages.
//
// Written against Kubernetes v1.37 (hack/conformance.sh's E2E_VERSION): the
// imports follow test/e2e/e2e_test.go of that release.
package conformance

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"k8s.io/component-base/version"
	conformancetestdata "k8s.io/kubernetes/test/conformance/testdata"
	"k8s.io/kubernetes/test/e2e"
	"k8s.io/kubernetes/test/e2e/framework"
	"k8s.io/kubernetes/test/e2e/framework/config"
	"k8s.io/kubernetes/test/e2e/framework/testfiles"
	e2etestingmanifests "k8s.io/kubernetes/test/e2e/testing-manifests"
	testfixtures "k8s.io/kubernetes/test/fixtures"

	// Constants the specs' labels use, frozen as in e2e.test.
	_ "k8s.io/kubernetes/test/e2e/feature"

	// Test sources beyond test/e2e/common (which package e2e imports).
	_ "k8s.io/kubernetes/test/e2e/node"

	// The framework's reconfiguration, as in e2e.test.
	_ "k8s.io/kubernetes/test/e2e/framework/debug/init"
	_ "k8s.io/kubernetes/test/e2e/framework/metrics/init"
	_ "k8s.io/kubernetes/test/e2e/framework/node/init"
	_ "k8s.io/kubernetes/test/utils/ktesting/format"
)

func TestMain(m *testing.M) {
	showVersion := flag.CommandLine.Bool("version", false, "Displays version information.")
	config.CopyFlags(config.Flags, flag.CommandLine)
	framework.RegisterCommonFlags(flag.CommandLine)
	framework.RegisterClusterFlags(flag.CommandLine)
	flag.Parse()
	if *showVersion {
		fmt.Println(version.Get())
		os.Exit(0)
	}
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "unknown additional command line arguments: %s\n", flag.Args())
		os.Exit(1)
	}
	testfiles.AddFileSource(e2etestingmanifests.GetE2ETestingManifestsFS())
	testfiles.AddFileSource(testfixtures.GetTestFixturesFS())
	testfiles.AddFileSource(conformancetestdata.GetConformanceTestdataFS())
	framework.AfterReadingAllFlags(&framework.TestContext)
	os.Exit(m.Run())
}

// TestE2E runs the selected specs; package e2e registers the suite's set-up
// (nodes schedulable, system pods running) and its report hooks.
func TestE2E(t *testing.T) { e2e.RunE2ETests(t) }
