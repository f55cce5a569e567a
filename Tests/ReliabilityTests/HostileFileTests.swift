import Foundation
@_spi(Testing) import SharedURLCacheStore
import Testing

extension Reliability {
    /// docs/Reliability.md T10: what the existing corruption tests do not plant (symlinked fan-out and
    /// temp directories, hard links to outside files, device nodes). Never followed, never
    /// written outside the root, tampered bodies are a miss.
    @Suite struct HostileFiles {
        static func incompressible(_ n: Int, size: Int = 30_000) -> [UInt8] {
            var rng = Seeded(seed: UInt64(n) &+ 99)
            return (0..<size / 8).flatMap { _ in withUnsafeBytes(of: rng.next()) { Array($0) } }
        }

        @Test("a bodies/xx fan-out directory replaced by a symlink: no body is ever written or read outside the root")
        func symlinkedFanOut() throws {
            let scratch = Scratch()
            let outside = scratch.root + "/outside"
            try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
            var store: CacheStore? = try CacheStore(directory: scratch.cache)
            // Given: a group member swapped every fan-out directory for a symlink to its own dir.
            for i in 0..<256 {
                let sub = scratch.cache + "/bodies/" + String(format: "%02x", i)
                try? FileManager.default.removeItem(atPath: sub) // stores make them as needed
                try FileManager.default.createSymbolicLink(atPath: sub, withDestinationPath: outside)
            }
            // When: entries are stored (by this handle, and by a fresh one).
            var stored = 0, refused: [String] = []
            for round in 0..<2 {
                for n in 0..<20 {
                    do {
                        try store!.store(RecordDescriptor(key: Array("k\(n)".utf8)), body: Self.incompressible(n))
                        stored += 1
                    } catch { refused.append(error.code.name) }
                }
                if round == 0 { store = nil; store = try? CacheStore(directory: scratch.cache) }
                if store == nil { break }
            }
            // Then: nothing landed outside the root.
            let leaked = (try? FileManager.default.contentsOfDirectory(atPath: outside)) ?? []
            #expect(leaked.isEmpty, "\(leaked.count) body files were written through the symlinks into \(outside)")
            // And a lookup never serves a file from outside.
            if let store {
                for n in 0..<20 {
                    if let hit = try store.record(for: Array("k\(n)".utf8)) {
                        #expect(hit.body == Self.incompressible(n))
                    }
                }
            }
            print("T10 fan-out symlinks: stored=\(stored) refused=\(Set(refused)) leakedOutside=\(leaked.count)")
        }

        @Test(
            "bodies/ or tmp/ replaced by a symlink before open: open refuses with .unsafeDirectory",
            arguments: ["bodies", "tmp"])
        func symlinkedDirectoryAtOpen(_ name: String) throws {
            let scratch = Scratch()
            _ = try CacheStore(directory: scratch.cache)
            let outside = scratch.root + "/outside"
            try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
            try FileManager.default.removeItem(atPath: scratch.cache + "/" + name)
            try FileManager.default.createSymbolicLink(atPath: scratch.cache + "/" + name, withDestinationPath: outside)
            var code: CacheError.Code?
            do {
                let store = try CacheStore(directory: scratch.cache)
                try store.store(RecordDescriptor(key: Array("k".utf8)), body: Self.incompressible(1))
            } catch { code = error.code }
            // The property: refused, nothing written through the link.
            #expect(code != nil, "open or store through a symlinked \(name)/ was refused")
            #expect(((try? FileManager.default.contentsOfDirectory(atPath: outside)) ?? []).isEmpty)
        }

        @Test(
            "bodies/ or tmp/ a symlink at open is reported as .unsafeDirectory (not .io)", arguments: ["bodies", "tmp"])
        func symlinkedDirectoryErrorCode(_ name: String) throws {
            let scratch = Scratch()
            _ = try CacheStore(directory: scratch.cache)
            try FileManager.default.removeItem(atPath: scratch.cache + "/" + name)
            try FileManager.default.createSymbolicLink(
                atPath: scratch.cache + "/" + name, withDestinationPath: scratch.root)
            var code: CacheError.Code?
            do { _ = try CacheStore(directory: scratch.cache) } catch { code = error.code }
            #expect(code == .unsafeDirectory)
        }

        @Test("tmp/ swapped for a symlink while open: temp files stay inside the root")
        func symlinkedTmpWhileOpen() throws {
            let scratch = Scratch()
            let store = try CacheStore(directory: scratch.cache)
            let outside = scratch.root + "/outside"
            try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
            try FileManager.default.moveItem(atPath: scratch.cache + "/tmp", toPath: scratch.cache + "/tmp.moved")
            try FileManager.default.createSymbolicLink(atPath: scratch.cache + "/tmp", withDestinationPath: outside)
            for n in 0..<10 {
                _ = try? store.store(RecordDescriptor(key: Array("k\(n)".utf8)), body: Self.incompressible(n))
            }
            #expect(((try? FileManager.default.contentsOfDirectory(atPath: outside)) ?? []).isEmpty)
        }

        @Test("a body hard-linked to an outside file: a miss, and the outside file is never changed or removed")
        func hardLinkToOutsideFile() throws {
            let scratch = Scratch()
            let store = try CacheStore(directory: scratch.cache)
            try store.store(RecordDescriptor(key: Array("k".utf8)), body: Self.incompressible(1))
            try store.store(RecordDescriptor(key: Array("other".utf8)), body: Self.incompressible(2))
            let path = scratch.cache + "/" + store.debugBodyPath(for: Array("k".utf8))!
            // Given: the body replaced by a hard link to someone's file (same size, even).
            let outside = scratch.root + "/victim"
            let secret = Data(
                repeating: 0x53,
                count: (try FileManager.default.attributesOfItem(atPath: path)[.size] as! NSNumber).intValue)
            FileManager.default.createFile(atPath: outside, contents: secret)
            try FileManager.default.removeItem(atPath: path)
            #expect(link(outside, path) == 0)
            // When: looked up, replaced, removed, compacted, verified with fix.
            #expect(try store.record(for: Array("k".utf8)) == nil, "tampered body → miss")
            try store.store(RecordDescriptor(key: Array("k".utf8)), body: Self.incompressible(3))
            _ = try store.remove(key: Array("k".utf8))
            var policy = CompactionPolicy()
            policy.gracePeriod = .zero
            _ = try store.compact(policy)
            _ = try store.verify(fix: true, checkBodies: true)
            // Then: the outside file is exactly as it was; the bystander is intact.
            #expect(FileManager.default.contents(atPath: outside) == secret)
            #expect(try store.record(for: Array("other".utf8))?.body == Self.incompressible(2))
        }

        @Test("device nodes at a body path and at the index: a miss / a refused open, never a hang")
        func deviceNodes() throws {
            guard geteuid() == 0 else { print("T10 device nodes skipped: mknod needs root"); return }
            let scratch = Scratch()
            let store = try CacheStore(directory: scratch.cache)
            for (n, minor) in [(1, 3), (2, 5)] { // /dev/null, /dev/zero
                try store.store(RecordDescriptor(key: Array("k\(n)".utf8)), body: Self.incompressible(n))
                let path = scratch.cache + "/" + store.debugBodyPath(for: Array("k\(n)".utf8))!
                try FileManager.default.removeItem(atPath: path)
                #expect(mknod(path, S_IFCHR | 0o660, makedev(1, UInt32(minor))) == 0)
                let started = Date()
                #expect(try store.record(for: Array("k\(n)".utf8)) == nil, "a device node is not a body")
                #expect(Date().timeIntervalSince(started) < 5)
            }
            let report = try store.verify(fix: true)
            #expect(report.isDamaged == false || report.repaired > 0)
            // The index file itself replaced by a device node: the open is refused.
            let other = Scratch()
            _ = try CacheStore(directory: other.cache)
            try FileManager.default.removeItem(atPath: other.cache + "/index.lmdb-lock")
            #expect(mknod(other.cache + "/index.lmdb-lock", S_IFCHR | 0o660, makedev(1, 5)) == 0)
            let result = try Child.run(["get", other.cache, "k"])
            #expect(result.status == 2 && result.err.contains("unsafeDirectory"), "\(result)")
        }
    }
}

private func makedev(_ major: UInt32, _ minor: UInt32) -> dev_t {
    // glibc's gnu_dev_makedev for small numbers.
    dev_t((major & 0xfff) << 8 | (minor & 0xff) | ((minor & ~0xff) << 12))
}
