// Command nnp stands in for the e2e image nonewprivs:1.3: installed setuid
// root, it prints its effective uid, so a spec sees "Effective uid: 0" when
// the setuid bit took effect and the container's own uid when
// allowPrivilegeEscalation=false (no_new_privs) kept it from doing so.
package main

import (
	"fmt"
	"os"
)

func main() { fmt.Printf("Effective uid: %d\n", os.Geteuid()) }
