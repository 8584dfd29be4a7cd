package redisstore

import "strings"

// Cluster slots, computed here as Redis Cluster does (its specification,
// "Keys distribution model"): go-redis keeps its own helpers internal.

// clusterSlots is the number of hash slots of a Redis Cluster.
const clusterSlots = 16384

// keySlot returns the slot of a Redis key: CRC16 of its hash tag (what
// lies between the first '{' and the next '}', when that is not empty),
// else of the whole key, modulo 16384.
func keySlot(key string) uint16 {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return crc16(key) % clusterSlots
}

// requestSlot returns the slot of every key of a request for the client
// key key: the prefix may hold no brace (validate), so the first '{' is
// the one that opens the key's tag, which is never empty.
func requestSlot(key string) uint16 { return crc16(tag(key)) % clusterSlots }

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0), the
// checksum of the Cluster specification.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc = crc<<8 ^ crc16Table[byte(crc>>8)^s[i]]
	}
	return crc
}

var crc16Table = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for range 8 {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()
