// Package launcher is the front end's side of starting a debug job: it
// picks the resource-manager adapter, checks that everything the job needs
// is there before submitting it, makes the session key and the private
// session directory, binds the session port, submits the job, helps the
// launch where the adapter needs it (routing file and master), and waits
// until every rank has joined the tree. What comes out is a
// client.Session ready for commands.
//
// It also owns the sessions built on such jobs: Relaunchable, the job of
// sdm debug or sdm attach that restart starts again; and reverse connect's
// two sides, Listener and Jobs (sdm listen: requests in, sessions of one
// or several jobs out) and HostRequest (sdm connect: an accepted request
// in, the job running here out). Front runs the whole front end of a
// session on such a job, for sdm debug, attach and listen: the job comes
// up, the console (package console) runs its commands, the job ends.
//
// What enters: the job to debug (program, ranks, adapter and its flags, or
// the pids or starter to acquire through MPIR, or an accepted request).
// What leaves: the session, the job's handle to end it, and the progress
// of the launch on the terminal; through Front, the console's output and
// the session's outcome.
package launcher
