package wire

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"testing"
	"time"
)

// BenchmarkHandshake is the CPU of one link's handshake, both ends, over
// loopback TCP: the Noise handshake links use, and for reference what
// TLS 1.3 with mutual certificate authentication (certificates issued by
// a per-session CA, the other way to bind roles) would cost instead. Run
// with -cpu 1 so that ns/op is CPU time (docs/PERFORMANCE.md).
func BenchmarkHandshake(b *testing.B) {
	b.Run("noise-NNpsk0", func(b *testing.B) {
		key := testKey(b, 1)
		for b.Loop() {
			x, y := tcpPair(b)
			done := make(chan error, 1)
			go func() {
				_, err := Handshake(y, key, FromChild(3, 8), time.Second)
				done <- err
			}()
			if _, err := Handshake(x, key, ToParent(3, 8), time.Second); err != nil {
				b.Fatal(err)
			}
			if err := <-done; err != nil {
				b.Fatal(err)
			}
			x.Close()
			y.Close()
		}
	})
	b.Run("tls13-mutual-ecdsa-reference", func(b *testing.B) {
		server, client := tlsConfigs(b)
		for b.Loop() {
			x, y := tcpPair(b)
			done := make(chan error, 1)
			go func() { done <- tls.Server(y, server).Handshake() }()
			if err := tls.Client(x, client).Handshake(); err != nil {
				b.Fatal(err)
			}
			if err := <-done; err != nil {
				b.Fatal(err)
			}
			x.Close()
			y.Close()
		}
	})
}

// tlsConfigs issues a CA and one ECDSA P-256 certificate for both ends.
func tlsConfigs(b *testing.B) (server, client *tls.Config) {
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leafKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "session"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		b.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	leafTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "tree"}, DNSNames: []string{"tree"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &leafKey.PublicKey, caKey)
	if err != nil {
		b.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	cert := tls.Certificate{Certificate: [][]byte{leafDER}, PrivateKey: leafKey}
	server = &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	client = &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert}, RootCAs: pool, ServerName: "tree"}
	return server, client
}
