package bench

import "runtime"

func heapSysKB() int64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapSys / 1024)
}
