package podstatus

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// second is the kubelet's Rfc3339Copy: the same instant, so the same JSON
// and semantic equality (only the Go location may differ: UTC here).
func TestSecondIsRfc3339Copy(t *testing.T) {
	local := time.FixedZone("UTC+5:30", 5*3600+1800)
	for _, tm := range []time.Time{{}, time.Now(), time.Date(2026, 11, 24, 7, 0, 59, 999999999, local),
		time.Date(1969, 12, 31, 23, 59, 59, 500, time.UTC), time.Unix(1700000000, 1).Local()} {
		mt := metav1.NewTime(tm)
		want, got := mt.Rfc3339Copy(), second(mt)
		assert.True(t, want.Equal(&got), "%v: %v, not %v", tm, got, want)
		wantJSON, err := want.MarshalJSON()
		assert.NoError(t, err)
		gotJSON, err := got.MarshalJSON()
		assert.NoError(t, err)
		assert.Equal(t, string(wantJSON), string(gotJSON))
	}
}
