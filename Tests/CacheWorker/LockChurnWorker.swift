import Foundation

/// `rel-lockchurn DIR COUNT`: a neighbour whose file locks come and go as fast as it can: it
/// takes a shared flock on each of COUNT files in DIR, releases them all, and again, until it
/// is killed or its parent goes. Each round adds COUNT lines to the head of /proc/locks and
/// takes them away, so a reader of that listing, which the kernel renders a page per read(),
/// sees the lines after them shift between two reads. `CHURNING` after the first round.
enum LockChurnWorker {
    static func run(_ args: [String]) -> Int32 {
        let dir = args[2]
        let count = Int(args[3])!
        let paths = (0..<count).map { dir + "/churn-\($0)" }
        var announced = false
        // Gone with the test that started it: an orphan churning on would make every later
        // listing of /proc/locks on the host unreadable (two churners refuse every rewrite).
        let parent = getppid()
        while getppid() == parent {
            let fds = paths.map { open($0, O_RDWR | O_CREAT | O_CLOEXEC, 0o600) }
            for fd in fds where fd >= 0 { _ = flock(fd, LOCK_SH) }
            for fd in fds where fd >= 0 { close(fd) }
            if !announced {
                print("CHURNING")
                fflush(nil)
                announced = true
            }
        }
        return 0
    }
}
