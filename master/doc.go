// Package master runs the root of the tree: the SDM started with --master.
// It reads (or, with --generate_routes, writes) the routing file, publishes
// the address where its children reach it, connects to the front end's
// session port (or waits for the front end to connect) and then routes
// commands down and merged answers up like any other node.
//
// What enters: Options (the routing file or the hosts to generate it for,
// where the front end is, or stdio) and, once up, commands from the front
// end. What leaves: the
// master file with its address, and the tree's merged answers and events,
// sent to the front end.
package master
