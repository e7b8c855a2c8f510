//go:build unix

/*
Copyright 2026 The mrtr-operator Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package localcluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// apiserverPKI writes into certDir what kube-apiserver serves with when a real node runs: a CA
// (returned, PEM), a serving certificate that also names the API server's Service address and DNS
// names (the address in-cluster clients dial, through kube-proxy), and the ServiceAccount token
// signing key. envtest writes all three itself unless apiserver.crt is already there, and its own
// serving certificate names only localhost and the bind address, which a pod's client, dialing
// 10.0.0.1, would refuse.
func apiserverPKI(certDir string, ips []net.IP) (caPEM []byte, err error) {
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return nil, err
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	ca := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "localcluster-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	if ca, err = x509.ParseCertificate(caDER); err != nil {
		return nil, err
	}

	servingKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serving := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(7 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
		IPAddresses: append([]net.IP{net.IPv4(127, 0, 0, 1), apiServiceIP}, ips...),
	}
	servingDER, err := x509.CreateCertificate(rand.Reader, serving, ca, &servingKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}

	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	saPub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}

	caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	files := map[string][]byte{
		"apiserver.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: servingDER}),
		// The names envtest gives the ServiceAccount key pair (its flags point at them).
		"sa-signer.crt": pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPub}),
		"ca.crt":        caPEM,
	}
	for name, key := range map[string]*ecdsa.PrivateKey{"apiserver.key": servingKey, "sa-signer.key": saKey} {
		der, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return nil, err
		}
		files[name] = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(certDir, name), b, 0o600); err != nil {
			return nil, err
		}
	}
	return caPEM, nil
}
