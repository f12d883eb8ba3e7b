FROM --platform=linux/x86_64 exec.env.x86_64.4a627068dc09bf680225d1:latest

COPY ./setup_repo.sh /root/
RUN /bin/bash /root/setup_repo.sh

WORKDIR /testbed/
