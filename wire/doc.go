// Package wire is what travels between the processes of a session: rank
// sets, the message envelope (Message, Group, Status) and its codec, the
// names of the ops and events and the types of their bodies, the hello
// that opens a link, session keys and directories, the Noise handshake
// and its encrypted records, and links (yamux: a control stream and an
// output stream).
//
// What enters: bytes from a connection (or a pipe), checked for length
// before anything is allocated, and the session key. What leaves: decoded
// messages and rank sets to the node and the client, and the bytes they
// send. Package op says which body type goes with which op or event; this
// package only encodes and decodes.
package wire
