package podsource

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// BenchmarkMuxThroughput: 10,000 pod updates (each a spec change of one of
// 1,000 pods, sent as an UPDATE delta) through the mux to a consumer.
func BenchmarkMuxThroughput(b *testing.B) {
	const pods, updates = 1000, 10000
	var versions [2][]*v1.Pod
	for v := range versions {
		for i := range pods {
			p := testPod("file", fmt.Sprintf("p%d", i), types.UID(fmt.Sprintf("u%d", i)))
			p.Spec.Containers[0].Image = fmt.Sprintf("img:%d", v)
			p.Labels = map[string]string{"app": "x", "tier": "y"}
			versions[v] = append(versions[v], p)
		}
	}
	ctx := context.Background()
	m := NewMux(MuxConfig{})
	m.Register("file")
	done := make(chan int)
	stop := make(chan struct{})
	go func() {
		n := 0
		for {
			select {
			case u := <-m.Updates():
				n += len(u.Pods)
			case <-stop:
				done <- n
				return
			}
		}
	}()
	if err := m.Update(ctx, PodUpdate{Op: SET, Pods: versions[0], Source: "file"}); err != nil {
		b.Fatal(err)
	}
	v := 0
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for i := range updates {
			if i%pods == 0 {
				v = 1 - v
			}
			if err := m.Update(ctx, PodUpdate{Op: UPDATE, Pods: []*v1.Pod{versions[v][i%pods]}, Source: "file"}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	close(stop)
	<-done
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*updates), "ns/update")
}

// BenchmarkFileRereadNoChange: the periodic full re-read of 500 unchanged
// manifests (list, stat, read, compare bytes; nothing decoded or sent).
func BenchmarkFileRereadNoChange(b *testing.B) {
	dir := b.TempDir()
	for i := range 500 {
		data := manifest(fmt.Sprintf("p%03d", i), "registry.k8s.io/pause:3.10")
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("p%03d.yaml", i)), []byte(data), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	m := NewMux(MuxConfig{})
	s := newTestFileSource(b, dir, m)
	if !s.resync() {
		b.Fatal("first read found nothing")
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if s.resync() {
			b.Fatal("no change expected")
		}
	}
}

// BenchmarkFileFirstRead500: the first read of 500 manifests (decode,
// default, validate, hash), for comparison.
func BenchmarkFileFirstRead500(b *testing.B) {
	dir := b.TempDir()
	for i := range 500 {
		data := manifest(fmt.Sprintf("p%03d", i), "registry.k8s.io/pause:3.10")
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("p%03d.yaml", i)), []byte(data), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for range b.N {
		b.StopTimer()
		s := newTestFileSource(b, dir, NewMux(MuxConfig{}))
		b.StartTimer()
		if !s.resync() {
			b.Fatal("nothing read")
		}
	}
}
