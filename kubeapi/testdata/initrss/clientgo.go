//go:build clientgo

package main

import (
	"net/http"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

func newClient(cfg *rest.Config, hc *http.Client) error {
	_, err := kubernetes.NewForConfigAndClient(cfg, hc)
	return err
}
