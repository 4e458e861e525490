//! The run's headless Services, one per task of the training cluster (not the
//! evaluator: nothing connects to it), built when asked for.

use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::container::PORT_NAME;
use super::meta::{meta, task_labels, task_selector};
use super::request::SpawnRequest;
use crate::roles::Task;

/// The run's services, built when asked for, one at a time, like
/// [`Pods`](super::Pods): a spawn only needs the ones in flight.
#[derive(Debug, Clone, PartialEq)]
pub struct Services {
    request: SpawnRequest,
}

impl Services {
    pub(super) fn new(request: SpawnRequest) -> Services {
        Services { request }
    }

    pub fn len(&self) -> usize {
        self.tasks().count()
    }

    fn tasks(&self) -> impl Iterator<Item = Task> + '_ {
        self.request.roles.tasks().filter(|t| t.role.in_cluster())
    }

    /// The services in creation order (chief, parameter servers, workers).
    pub fn iter(&self) -> impl Iterator<Item = Service> + '_ {
        self.tasks().map(|task| service(&self.request, task))
    }

    pub fn names(&self) -> impl Iterator<Item = String> + '_ {
        self.tasks().map(|t| t.name(&self.request.tag))
    }
}

fn service(req: &SpawnRequest, task: Task) -> Service {
    Service {
        metadata: meta(req, task.name(&req.tag), task_labels(&req.tag, task)),
        spec: Some(ServiceSpec {
            cluster_ip: Some("None".to_string()),
            publish_not_ready_addresses: Some(true),
            selector: Some(task_selector(&req.tag, task)),
            ports: Some(vec![ServicePort {
                name: Some(PORT_NAME.to_string()),
                port: i32::from(req.port),
                // The pods' port by name: a restart of every task moves it
                // (`roles::next_port`), and the service's endpoints follow.
                target_port: Some(IntOrString::String(PORT_NAME.to_string())),
                protocol: Some("TCP".to_string()),
                ..ServicePort::default()
            }]),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    }
}
