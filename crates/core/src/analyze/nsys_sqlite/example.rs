//! A small Nsight Systems SQLite export, written as SQL, for tests and demonstrations.
//!
//! The tables and columns follow NVIDIA's documented export schema (Nsight Systems User
//! Guide, "SQLite Schema Reference", as documented for 2021.5 through 2025.x releases;
//! only the columns the analyzer reads and a few others are created). Times are ns.
//!
//! What it holds (one process, pid 100, one GPU, stream 7), in µs:
//! * kernels: `gemm` 1000–1050 and 1060–1100 (launched at 990–995 and 1051–1055),
//!   `ncclKernel_AllReduce` 1300–1400 (launched at 1200–1210);
//! * a 10 MB host-to-device copy 1150–1160 (launched at 1140–1145) and a 1000-byte set
//!   1170–1175 (no launch call);
//! * NVTX ranges: `decode` 980–1120 (push/pop) and 1140–1180 (push/pop), `allreduce`
//!   1250–1450 (start/end, its text in `StringIds`), and a mark (not a range);
//! * `TARGET_INFO_GPU`: device 0, "NVIDIA H100 80GB HBM3", 132 SMs.

/// The SQL that creates the example export in an empty database.
pub const EXAMPLE_EXPORT_SQL: &str = "
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
  correlationId INTEGER, globalPid INTEGER, demangledName INTEGER NOT NULL,
  shortName INTEGER NOT NULL, mangledName INTEGER, launchType INTEGER, cacheConfig INTEGER,
  registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL, gridY INTEGER NOT NULL,
  gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL, blockY INTEGER NOT NULL,
  blockZ INTEGER NOT NULL, staticSharedMemory INTEGER NOT NULL,
  dynamicSharedMemory INTEGER NOT NULL, localMemoryPerThread INTEGER NOT NULL,
  localMemoryTotal INTEGER NOT NULL, gridId INTEGER NOT NULL,
  sharedMemoryExecuted INTEGER, graphNodeId INTEGER, sharedMemoryLimitConfig INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL,
  eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER,
  nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, callchainId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
  correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL,
  copyKind INTEGER NOT NULL, deprecatedSrcId INTEGER, srcKind INTEGER, dstKind INTEGER,
  srcDeviceId INTEGER, srcContextId INTEGER, dstDeviceId INTEGER, dstContextId INTEGER,
  migrationCause INTEGER, graphNodeId INTEGER, virtualAddress INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
  correlationId INTEGER, globalPid INTEGER, value INTEGER NOT NULL, bytes INTEGER NOT NULL,
  graphNodeId INTEGER, memKind INTEGER);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,
  rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER,
  endGlobalTid INTEGER, textId INTEGER, domainId INTEGER, uint64Value INTEGER,
  int64Value INTEGER, doubleValue REAL, uint32Value INTEGER, int32Value INTEGER,
  floatValue REAL, jsonTextId INTEGER, jsonText TEXT);
CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT,
  busLocation TEXT, isDiscrete INTEGER, l2CacheSize INTEGER, totalMemory INTEGER,
  memoryBandwidth INTEGER, clockRate INTEGER, smCount INTEGER, pwGpuId INTEGER,
  uuid TEXT, luid INTEGER, chipName TEXT, cuDevice INTEGER, ctxId INTEGER,
  computeMajor INTEGER, computeMinor INTEGER);
CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT, localTime TEXT);

INSERT INTO StringIds VALUES
  (1, 'void gemm_kernel<float>(float const*, float*)'), (2, 'gemm_kernel'),
  (3, 'ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)'),
  (4, 'ncclKernel_AllReduce_RING_LL_Sum_float'),
  (5, 'cudaLaunchKernel_v7000'), (6, 'cudaMemcpyAsync_v3020'), (7, 'allreduce');
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId,
  correlationId, globalPid, demangledName, shortName, registersPerThread, gridX, gridY,
  gridZ, blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory,
  localMemoryPerThread, localMemoryTotal, gridId) VALUES
  (1000000, 1050000, 0, 1, 7, 1, 1677721600, 1, 2, 128, 132, 1, 1, 256, 1, 1, 0, 49152, 0, 0, 1),
  (1060000, 1100000, 0, 1, 7, 2, 1677721600, 1, 2, 128, 132, 1, 1, 256, 1, 1, 0, 49152, 0, 0, 2),
  (1300000, 1400000, 0, 1, 7, 3, 1677721600, 3, 4, 96, 16, 1, 1, 512, 1, 1, 0, 0, 0, 0, 3);
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, correlationId,
  nameId, returnValue) VALUES
  (990000, 995000, 1, 1677721701, 1, 5, 0),
  (1051000, 1055000, 1, 1677721701, 2, 5, 0),
  (1200000, 1210000, 1, 1677721701, 3, 5, 0),
  (1140000, 1145000, 1, 1677721701, 4, 6, 0);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, contextId, streamId,
  correlationId, globalPid, bytes, copyKind) VALUES
  (1150000, 1160000, 0, 1, 7, 4, 1677721600, 10000000, 1);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET (start, end, deviceId, contextId, streamId,
  correlationId, globalPid, value, bytes) VALUES
  (1170000, 1175000, 0, 1, 7, 5, 1677721600, 0, 1000);
INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, textId) VALUES
  (980000, 1120000, 59, 'decode', 1677721701, NULL),
  (1140000, 1180000, 59, 'decode', 1677721701, NULL),
  (1250000, 1450000, 60, NULL, 1677721701, 7),
  (1000000, NULL, 34, 'a mark', 1677721701, NULL);
INSERT INTO TARGET_INFO_GPU (vmId, id, name, busLocation, isDiscrete, l2CacheSize,
  totalMemory, memoryBandwidth, clockRate, smCount, chipName, cuDevice, computeMajor,
  computeMinor) VALUES
  (0, 0, 'NVIDIA H100 80GB HBM3', '0000:18:00.0', 1, 52428800, 85017755648,
   3352320000000, 1980000000, 132, 'GH100', 0, 9, 0);
INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (1764748800000000000, '', '');
";

/// SQL that turns an empty database into a large generated export, for measuring the
/// analyzer: the example's tables (and its strings and GPU), with its rows replaced by
/// `kernels` kernels of 1,000 names over 4 streams of device 0, 2 µs apart and 1.5–1.8 µs
/// long, each with its runtime launch call (by correlation id), and one NVTX range per
/// hundred kernels (50 names). About 90 MiB for 1,000,000 kernels.
pub fn generated_export_sql(kernels: u64) -> String {
    format!(
        "{EXAMPLE_EXPORT_SQL}
DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL; DELETE FROM CUPTI_ACTIVITY_KIND_RUNTIME;
DELETE FROM CUPTI_ACTIVITY_KIND_MEMCPY; DELETE FROM CUPTI_ACTIVITY_KIND_MEMSET;
DELETE FROM NVTX_EVENTS;
WITH RECURSIVE s(i) AS (SELECT 8 UNION ALL SELECT i + 1 FROM s WHERE i < 1000)
  INSERT INTO StringIds SELECT i, 'void kernel_' || i || '<float, 128>(float const*, float*, int)' FROM s;
WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < {kernels})
  INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId,
    correlationId, globalPid, demangledName, shortName, registersPerThread, gridX, gridY,
    gridZ, blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory,
    localMemoryPerThread, localMemoryTotal, gridId)
  SELECT i * 2000, i * 2000 + 1500 + (i % 7) * 50, 0, 1, 7 + (i % 4), i, 1677721600,
    8 + (i % 993), 8 + (i % 993), 64, 132, 1, 1, 256, 1, 1, 0, 0, 0, 0, i FROM s;
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, correlationId, nameId, returnValue)
  SELECT start - 900, start - 100, 1, 1677721701, correlationId, 5, 0 FROM CUPTI_ACTIVITY_KIND_KERNEL;
WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < {kernels} / 100)
  INSERT INTO NVTX_EVENTS (start, end, eventType, text)
  SELECT i * 200000, i * 200000 + 150000, 59, 'layer ' || (i % 50) FROM s;"
    )
}
