package nodestatus

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/containernetworking/cni/libcni"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
)

// RuntimeStatusFunc reads the runtime's conditions;
// (*runtime.Client).RuntimeStatus is one.
type RuntimeStatusFunc func(ctx context.Context) (*kc.RuntimeStatus, error)

// RuntimeCheck fails, with the kubelet's messages, while the runtime does
// not answer or says it is not ready.
func RuntimeCheck(status RuntimeStatusFunc) Check {
	return func(ctx context.Context) error {
		st, err := status(ctx)
		if err != nil {
			return fmt.Errorf("container runtime is down: %w", err)
		}
		if c := st.Condition(kc.RuntimeReady); c == nil || !c.Status {
			return fmt.Errorf("container runtime not ready: %s", describe(c, kc.RuntimeReady))
		}
		return nil
	}
}

// NetworkCheck fails while the runtime says its network is not ready,
// e.g. "container runtime network not ready: NetworkReady=false
// reason:NetworkPluginNotReady message:Network plugin returns error: cni
// plugin not initialized". Agents whose pods all use the host network may
// leave it out, as the kubelet cannot.
func NetworkCheck(status RuntimeStatusFunc) Check {
	return func(ctx context.Context) error {
		st, err := status(ctx)
		if err != nil {
			return nil // RuntimeCheck reports a runtime that does not answer
		}
		if c := st.Condition(kc.NetworkReady); c == nil || !c.Status {
			return fmt.Errorf("container runtime network not ready: %s", describe(c, kc.NetworkReady))
		}
		return nil
	}
}

func describe(c *kc.RuntimeCondition, t string) string {
	if c == nil {
		return t + " condition missing"
	}
	return c.String()
}

// CNIConfigCheck fails while confDir (the runtime's CNI configuration
// directory, /etc/cni/net.d by default) holds no network configuration
// that libcni can load, with the message a CNI runtime gives then. It
// tells the reason before the runtime's own NetworkReady catches up, and
// for runtimes that do not report it.
func CNIConfigCheck(confDir string) Check {
	return func(context.Context) error {
		if err := loadCNIConfig(confDir); err != nil {
			return fmt.Errorf("container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady "+
				"message:Network plugin returns error: cni config load failed: %w: cni plugin not initialized", err)
		}
		return nil
	}
}

// loadCNIConfig loads the first configuration in dir, in the lexical order
// runtimes use; it errs when none loads.
func loadCNIConfig(dir string) error {
	files, err := libcni.ConfFiles(dir, []string{".conf", ".conflist", ".json"})
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no network config found in %s", dir)
	}
	var errs []error
	for _, f := range files {
		var err error
		if filepath.Ext(f) == ".conflist" {
			_, err = libcni.ConfListFromFile(f)
		} else {
			var conf *libcni.NetworkConfig
			if conf, err = libcni.ConfFromFile(f); err == nil && conf.Network.Type == "" {
				err = errors.New("no plugin type")
			}
		}
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", f, err))
	}
	return fmt.Errorf("no valid network config in %s: %w", dir, errors.Join(errs...))
}

// PLEGCheck fails while the PLEG is unhealthy, with the kubelet's
// "PLEG is not healthy: ..." message; healthy is (pleg.PLEG).Healthy.
func PLEGCheck(healthy func() (bool, error)) Check {
	return func(context.Context) error {
		if ok, err := healthy(); !ok {
			return fmt.Errorf("PLEG is not healthy: %w", err)
		}
		return nil
	}
}
