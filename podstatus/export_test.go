package podstatus

import "time"

// AfterBatch has Run call f after each batch, once its retry timer is set.
func AfterBatch(s *Syncer, f func(tried int, retry time.Time)) { s.afterBatch = f }
