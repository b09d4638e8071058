//go:build integration

package events_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/nodekit-dev/nodekit/events"
	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/internal/testenv"
	"github.com/nodekit-dev/nodekit/kubeapi"
)

// On the real kube-apiserver, with the node's credentials: a repeated
// event is one Event whose count the recorder's PATCHes raise, and ten
// messages of one reason make the combined event, as the kubelet's.
func TestRecorderOnTheAPIServer(t *testing.T) {
	api := testenv.NeedAPIServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rec, err := events.New(events.Config{Sink: kubeapi.EventSink{Client: testenv.KubeAPI(t, api.NodeConfig)},
		Source: v1.EventSource{Component: "kubelet", Host: api.Node}})
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- rec.Run(runCtx) }()
	defer func() { stop(); require.NoError(t, <-done) }()

	pod := &v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "default", Name: "events-" + rand.String(5), UID: "u1"}
	for range 3 {
		rec.Event(pod, v1.EventTypeWarning, "BackOff", "Back-off restarting failed container web")
	}
	for i := range 10 {
		rec.Eventf(pod, v1.EventTypeNormal, "Pulling", "Pulling image \"web:%d\"", i)
	}
	var got []v1.Event
	poll.Eventually(t, func() bool {
		list, err := api.Admin.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod.Name})
		require.NoError(t, err)
		got = list.Items
		backOff, combined := 0, 0
		for _, ev := range got {
			if ev.Reason == "BackOff" {
				backOff = int(ev.Count)
			}
			if strings.HasPrefix(ev.Message, "(combined from similar events): ") {
				combined++
			}
		}
		return backOff == 3 && combined == 1
	}, 30*time.Second, 50*time.Millisecond, func() string { return fmt.Sprintf("%d events: %v", len(got), got) })
	assert.Len(t, got, 11, "one BackOff, nine Pulling, one combined")
	for _, ev := range got {
		assert.Equal(t, v1.EventSource{Component: "kubelet", Host: api.Node}, ev.Source)
		if strings.HasPrefix(ev.Message, "(combined") { // client-go's combined event has no reporting fields
			assert.Empty(t, ev.ReportingController+ev.ReportingInstance)
			continue
		}
		assert.Equal(t, "kubelet", ev.ReportingController)
		assert.Equal(t, api.Node, ev.ReportingInstance)
	}
}
