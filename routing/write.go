package routing

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
)

// WriteTo writes the table to w in the PTP routing file format, one entry per
// line in index order, each line ending in '\n'. It refuses, without writing
// anything, a table that Parse could not read back.
func (t *Table) WriteTo(w io.Writer) (int64, error) {
	if err := t.validate(); err != nil {
		return 0, fmt.Errorf("routing: %w", err)
	}
	cw := &countingWriter{w: w}
	bw := bufio.NewWriterSize(cw, 64<<10)
	line := make([]byte, 0, 32+maxHostLen)
	line = strconv.AppendInt(line, int64(len(t.Entries)), 10)
	line = append(line, '\n')
	bw.Write(line) // bufio.Writer errors are sticky; Flush reports them
	for _, e := range t.Entries {
		line = strconv.AppendInt(line[:0], int64(e.Index), 10)
		line = append(line, ' ')
		line = append(line, e.Host...)
		line = append(line, ' ')
		line = strconv.AppendInt(line, int64(e.Port), 10)
		line = append(line, '\n')
		bw.Write(line)
	}
	err := bw.Flush()
	return cw.n, err
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// Write is the one writer of a job's routing files: the master file of
// routingFile, when master is set, then the routing file, when t is set.
// The master file comes first, so that a server that sees the routing
// file finds its master's entry too. Whoever decides an address writes
// it: a launcher that binds every socket (rm/local) both, a master that
// binds its own port the master file, a master given the hosts
// (Generate) or the first server of a computed table the routing file.
func Write(routingFile string, t *Table, master *Entry) error {
	if master != nil {
		if err := writeMaster(routingFile, *master); err != nil {
			return err
		}
	}
	if t != nil {
		return writeFile(routingFile, t)
	}
	return nil
}

// writeFile writes the table to path so that readers see either the old file
// or the complete new one, never a part (see writeAtomic). The file gets
// mode 0644, since every server of the job, possibly under another user's
// umask, must read it. An invalid table is refused before anything is
// created.
func writeFile(path string, t *Table) error {
	if err := t.validate(); err != nil {
		return fmt.Errorf("writing routing file %s: %w", path, err)
	}
	err := writeAtomic(path, func(w io.Writer) error {
		_, err := t.WriteTo(w)
		return err
	})
	if err != nil {
		return fmt.Errorf("writing routing file %s: %w", path, err)
	}
	return nil
}

// syncDir makes the rename itself durable. It is best effort: some file
// systems refuse to sync a directory, and the file is in place either way.
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	d.Sync()
	d.Close()
}
