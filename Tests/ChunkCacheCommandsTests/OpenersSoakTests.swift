import Foundation
import TestSupport
import Testing

/// Processes that only open the store, beside readers and a writer of new items (CONTRACT §2: many processes
/// share one store; an open rolls back only what a dead writer left pending).
///
/// Every open runs the crash clean-up. A clean-up that trusted an old look at the pending manifests once
/// dropped the manifest of a put that had just published: the put reported success, and every later read
/// of the new item failed. `CHUNKCACHE_SOAK_SECONDS` sets the length (30 s here by default, half the other
/// soaks'; `scripts/soak.sh` runs it longer).
@Suite(.serialized) struct OpenersSoakTests {
    static let seconds = (Double(ProcessInfo.processInfo.environment["CHUNKCACHE_SOAK_SECONDS"] ?? "") ?? 60) / 2

    /// Four openers loop `stat`; two readers loop ranges of what was put; one writer loops: random bytes of
    /// 0.1-3 MB, `put` as a new item, fetch it back whole. Prints one JSON line with what each did and the
    /// failures it saw.
    static let driver = #"""
        import json, os, random, subprocess, sys, threading, time
        binary, store, work, seconds = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
        end = time.time() + seconds
        lock = threading.Lock()
        put, errors, counts = {}, [], {"opens": 0, "reads": 0}

        def run(*arguments):
            return subprocess.run([binary, "--store", store, "--json", *arguments], capture_output=True)

        def fail(what):
            with lock:
                if len(errors) < 20: errors.append(what[:400])

        def fetched(result, data):
            out = json.loads(result.stdout)
            location, count = out["retrievedRange"]["location"], out["retrievedRange"]["length"]
            with open(out["path"], "rb") as f:
                f.seek(location); got = f.read(count)
            os.unlink(out["path"])
            return count > 0 and got == data[location:location + count]

        def opener():
            while time.time() < end:
                r = run("stat")
                if r.returncode != 0: fail("stat: " + r.stderr.decode())
                with lock: counts["opens"] += 1

        def reader(seed):
            rng = random.Random(seed)
            while time.time() < end:
                with lock: names = list(put)
                if not names: time.sleep(0.01); continue
                name = rng.choice(names); data = put[name]
                start = rng.randrange(len(data)); length = rng.randint(1, 262144)
                r = run("fetch", "--domain", "c", name, "--range", "%d:%d" % (start, length))
                if r.returncode != 0: fail("fetch %s: %s" % (name, r.stderr.decode())); continue
                if not fetched(r, data): fail("wrong bytes " + name)
                with lock: counts["reads"] += 1

        def writer():
            rng = random.Random(26)
            n = 0
            while time.time() < end:
                data = rng.randbytes(rng.randint(100_000, 3_000_000))
                path = os.path.join(work, "input")
                with open(path, "wb") as f: f.write(data)
                name = "new%d" % n; n += 1
                r = run("put", "--domain", "c", name, path)
                if r.returncode != 0: fail("put %s: %s" % (name, r.stderr.decode())); continue
                r = run("fetch", "--domain", "c", name)
                if r.returncode != 0: fail("fetch after put %s: %s" % (name, r.stderr.decode()))
                elif not fetched(r, data): fail("wrong bytes after put " + name)
                with lock: put[name] = data

        threads = [threading.Thread(target=opener) for _ in range(4)]
        threads += [threading.Thread(target=reader, args=(s,)) for s in range(2)]
        threads += [threading.Thread(target=writer)]
        for t in threads: t.start()
        for t in threads: t.join()
        # Every put, read back once more after everyone stopped.
        for name, data in sorted(put.items()):
            r = run("fetch", "--domain", "c", name)
            if r.returncode != 0: fail("final fetch %s: %s" % (name, r.stderr.decode()))
            elif not fetched(r, data): fail("wrong bytes at the end " + name)
        print(json.dumps({"puts": len(put), "opens": counts["opens"], "reads": counts["reads"], "errors": errors}))
        """#

    @Test(
        "§2: four processes opening the store beside readers and a writer of new items lose no put; verify finds the store clean",
        .enabled(if: ChunkCacheBinary.path != nil, "needs the built chunkcache executable"))
    func openersBesideAWriterOfNewItems() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            try runJSON(store, ["init"])
            try Self.driver.write(toFile: dir + "/driver.py", atomically: true, encoding: .utf8)
            let binary = try #require(ChunkCacheBinary.path)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
            process.arguments = [dir + "/driver.py", binary, store, dir, String(Self.seconds)]
            let output = Pipe()
            let errors = Pipe()
            process.standardOutput = output
            process.standardError = errors
            try process.run()
            let printed = output.fileHandleForReading.readDataToEndOfFile()
            let complaints = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            try #require(process.terminationStatus == 0, "the driver failed: \(complaints)")

            let report = try parseJSONObject(String(decoding: printed, as: UTF8.self))
            #expect(try report.array("errors").isEmpty, "\(report)")
            let puts = try report.int("puts")
            #expect(puts >= 5, "the writer barely ran: \(report)")
            #expect(try report.int("opens") >= 20, "the openers barely ran: \(report)")
            let verified = try runJSON(store, ["verify"])
            for key in ["corrupt", "damagedVersions", "damagedRecords", "inconsistencies"] {
                #expect(try verified.array(key).isEmpty, "verify lists \(key): \(verified)")
            }
            #expect(try runJSON(store, ["stat"]).int("versions") == puts)
        }
    }
}
