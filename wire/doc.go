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
//
// # The handshake
//
// A link is one TCP connection (or, for --proxy=stdio, the master's
// standard input and output; or, between a host's leader and its members,
// pipes handed over a Unix socket: local links, below). Before anything
// else both ends run the handshake (Handshake), the Noise protocol
// framework's NNpsk0 (X25519, AES-GCM, SHA-256, through
// github.com/flynn/noise) with the session key as the pre-shared key:
//
//  1. Each end sends a preamble in clear, magic and protocol version (3),
//     and checks the peer's: a port scanner is told apart at its first
//     bytes, a peer of an earlier protocol by its version, and both are
//     dropped at once with the reason logged. The responder, the end that
//     accepted the connection (the front end on a pipe), follows its
//     preamble with a challenge of 16 random bytes, fresh for each
//     connection.
//  2. The initiator, the end that made the connection (the master on a
//     pipe), sends its ephemeral key, bound to the challenge (it ends the
//     prologue); the key is mixed in before that first message, so it
//     checks out only for a peer that holds the key, on this connection.
//  3. The responder answers with its own ephemeral key, and the initiator
//     confirms with a first encrypted record. A responder sends nothing
//     that depends on the key before the initiator proved it holds it on
//     this very connection: a first message replayed from an earlier link
//     (protocol 2 answered it, and only its confirmation failed) is
//     refused at once with an empty record, and the replayer has had the
//     preamble, the challenge and that refusal, nothing else. A connection
//     closed without the refusal (let go to make room under a flood) is
//     tried again. That is two round trips.
//
// The link's description is bound into the handshake (Noise's prologue):
// "tree link to parent P of N" or "front-end link", and which end (upper
// or lower) initiated. Both ends compute it from what they know (a child
// its parent's index from the tree, a parent its own), so a handshake made
// for one link fails on every other: a child's for parent 3 at parent 5, a
// front end's or a master's at a tree port, two listeners relayed to each
// other. A master that listens for its front end (no --host) is the
// responder there, as every listener is.
//
// # Records
//
// After the handshake every byte is a record: a 2-byte length and a Noise
// transport message (AES-GCM, its nonce a counter), at most 64 KiB. A
// record that fails its check (altered, dropped, reordered, forged) ends
// the link; Link.Err and every read say why (ErrTampered, "record 12 from
// HOST:PORT was altered or forged on the way"), and the node logs it as
// the reason the link was lost. Garbage, another version, a wrong key, a
// link of another kind or a stall (5 s) drop the connection with a logged
// reason; the peer has seen our preamble (and, from a responder, the
// challenge) and nothing else.
//
// # Streams and liveness
//
// Over the records the connection carries a yamux session with two
// streams: control (commands, replies, events) and output (the program's
// output), so that a chatty program never delays a command. yamux writes a
// frame's header and body separately; a small wrapper sends them as one
// write.
//
// Each end notes when its peer was last heard from (any record;
// liveness.go) and pings an idle peer four times a minute (a quarter of
// LinkConfig.Silence); a node that awaits an answer from a child pings it
// every second while it does, as on local links, so that an idle tree
// wakes nobody (a tree of 1024 ranks, one node per rank, idled at 0.6
// cores when every link pinged every second, 0.03 now). yamux's own
// keepalive is off, since it takes a process that was itself stopped for a
// silent peer.
//
// A link silent for a minute (LinkConfig.Silence) is dropped: long enough
// for a server stopped by job control, a swapping node or a hung file
// system to come back without a loss (commands stop waiting for it after
// 5 s anyway), short enough that a host that vanished is reported and the
// servers below it end. A write that cannot go out for that long breaks
// the link too. A server that exits or is killed is noticed at once.
//
// # Messages
//
// Messages (Message) are length-prefixed msgpack arrays, encoded by hand
// (3.5× faster than reflection): kind, id, op, rank set, timeout, body,
// groups. A frame is at most 16 MiB, and every length inside a frame or an
// op's body (strings, binaries, element counts) is checked against the
// bytes that are left before anything is allocated for it. Rank sets
// travel as sorted disjoint ranges and only the canonical form is
// accepted, so equal sets are equal bytes. The first message on a link is
// the dialer's hello: its index and the job size, which the parent checks
// against the tree; a server's hello also carries its host, so that errors
// name it, and, under a layout (Layout), its ranks.
//
// # Local links
//
// A link between a member and its leader (NewLocalLink) runs without the
// handshake and without encryption: the bytes never leave the host, and the
// kernel tells each end who the other is (SO_PEERCRED): a peer of another
// user is refused (ErrAuth) on either side before a byte is read. The
// socket's name is LocalAddress's. The link then runs over three pipes,
// not over the socket nor yamux: the member makes them (the control
// stream's two, and one for its output, which only goes up) and passes the
// leader its ends over the socket (SCM_RIGHTS), which both close then. A
// message costs one write and one read and no session goroutine or window
// update, and wakes only its reader: a Unix socket signals room to write at
// every read of its peer, which the Go runtime's poller turns into a
// wake-up of the writer, while a pipe signals it only to a writer that
// found it full; reads and writes are raw system calls on the non-blocking
// pipes, since a Go system call after an idle spell wakes the runtime's
// monitor thread too.
//
// A local link pings only while an answer is due from the member, or it
// was found silent (the leader's once-a-second check of its children),
// with ping and pong messages that the link's reader answers and swallows;
// a member's exit or kill closes its ends of the pipes, which is noticed at
// once. An idle host wakes none of its members. The hello and everything
// after it are as on TCP links.
//
// The leader's side of a member's hand-over of its rank is here too
// (AcceptMember, Member.Spawn: a debugger's pipes and pidfd passed); the
// member's side is package member.
package wire
