"""Access: who the callers are (users and their bearer tokens), what they may
do (permissions and tenant scope, SPEC A-2, A-3) and the record of what they
did (the operation audit). A service layer below the API: the API, the CLI
and the demo loader all use it; it never imports any of them."""
