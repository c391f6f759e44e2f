package remote

// FromStatus exposes fromStatus to the external tests.
var FromStatus = fromStatus
