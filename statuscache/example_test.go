package statuscache_test

import (
	"context"
	"fmt"
	"time"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/statuscache"
)

// A pod worker that acted at t1 waits for a status read after t1.
func Example() {
	c := statuscache.New()
	t0 := time.Unix(1700000000, 0)
	t1 := t0.Add(time.Second)
	c.Set("uid-1", &kc.PodStatus{ID: "uid-1", Name: "before"}, nil, t0)

	got := make(chan string)
	go func() {
		st, _ := c.GetNewerThan(context.Background(), "uid-1", t1) // blocks: the cached status is older
		got <- st.Name
	}()
	c.Set("uid-1", &kc.PodStatus{ID: "uid-1", Name: "after"}, nil, t1.Add(time.Millisecond)) // the PLEG's next read
	fmt.Println(<-got)
	// Output: after
}
