package fleet

import "time"

// RequestTimeout bounds one request to a fleet API (the worker's HTTP
// client). It is Nexus's timeout for MGS (omicron
// nexus/mgs-updates/src/driver_update.rs: 75 s): MGS itself may wait 60 s
// for an SP before it answers (a reset, a start while the SP erases a
// slot), and a shorter timeout would give up on an answer that is still
// coming, then send the request again.
const RequestTimeout = 75 * time.Second
