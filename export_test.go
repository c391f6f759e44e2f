package equeue

// CrashConsumer stops c as a killed process would: no commit, no leave.
func CrashConsumer(c *Consumer) { c.crash() }
