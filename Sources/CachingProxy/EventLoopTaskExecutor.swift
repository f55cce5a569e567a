import NIOCore

/// Runs a task's jobs on one event loop (Swift's task executor preference, SE-0417), so a
/// request's async work — the caching flow, AsyncHTTPClient's continuations — stays on the
/// thread of the connection it answers: no hop to the cooperative pool and back per request.
///
/// The price: the flow's synchronous work runs on the event loop — a hit's index read and
/// inflate (what nginx's workers do too), and on a miss the store (body write, index commit;
/// one `fdatasync` in the default durability mode). Other connections on that loop wait for it.
/// NIO's event loops are `SerialExecutor`s but not `TaskExecutor`s in swift-nio 2.101, hence
/// this adapter.
final class EventLoopTaskExecutor: TaskExecutor {
    let loop: any EventLoop

    init(_ loop: any EventLoop) {
        self.loop = loop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
