//go:build !clientgo

package main

import (
	"net/http"

	"k8s.io/client-go/rest"

	"github.com/nodekit-dev/nodekit/kubeapi"
)

func newClient(cfg *rest.Config, hc *http.Client) error {
	_, err := kubeapi.New(cfg, hc)
	return err
}
