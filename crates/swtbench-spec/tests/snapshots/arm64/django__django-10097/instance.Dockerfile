FROM --platform=linux/x86_64 exec.env.x86_64.e9d0d0fc69db08dbe6be56:latest

COPY ./setup_repo.sh /root/
RUN /bin/bash /root/setup_repo.sh

WORKDIR /testbed/
