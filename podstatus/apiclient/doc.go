// Package apiclient is the API server for a podstatus.APIWriter: PodAPI
// adapts the API client (kubeapi) to podstatus.PodAPI, with the kubelet's
// calls. It reads a pod with GET, patches pods/status with a
// strategic-merge patch (which carries the pod's UID as a precondition),
// and deletes a pod with grace period 0 and its UID as a precondition, so
// that a pod recreated with the same name is never touched. Errors are
// client-go's: apierrors.IsNotFound tells a pod that is gone.
//
// It is its own package so that podstatus, and the agents that write no
// statuses to an API server, do not compile client-go.
//
//	client, err := kubeapi.New(nodeCredentials, httpClient)
//	api, err := apiclient.New(client)
//	writer, err := podstatus.NewAPIWriter(podstatus.APIWriterConfig{API: api, Statuses: statuses})
//	go writer.Run(ctx)
package apiclient
